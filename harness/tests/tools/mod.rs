//! The programs some tests drive besides lockchaos (headless Chromium, ssh-keygen), installed
//! from Debian's packages with apt-get when missing, as the node image's build installs
//! mmdebstrap: the README's test command does its own set-up on a fresh machine.

#![allow(dead_code)] // each test binary uses its own part of it

use std::process::Command;
use std::sync::Mutex;

/// One install at a time within a test binary (apt-get holds a lock of its own across them).
static INSTALLING: Mutex<()> = Mutex::new(());

fn on_path(name: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {name}")]).output().is_ok_and(|o| o.status.success())
}

/// The first of `names` on the PATH; else Debian's `package` installed, and `names[0]`.
pub fn installed(names: &[&str], package: &str) -> String {
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(name) = names.iter().find(|n| on_path(n)) {
        return name.to_string();
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    assert!(root, "this test needs {}: apt-get install {package} (run as root, the tests install it themselves)", names[0]);
    let script = format!("apt-get update -qq && apt-get install -y -qq --no-install-recommends {package}");
    let out = Command::new("sh").args(["-c", &script]).env("DEBIAN_FRONTEND", "noninteractive").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && on_path(names[0]), "installing {package} with apt-get failed: {}", said.trim());
    names[0].to_string()
}

/// Debian's chromium (or another Chromium already on the PATH).
pub fn chromium() -> String {
    installed(&["chromium", "chromium-browser", "google-chrome"], "chromium")
}
