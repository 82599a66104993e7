//! `.github/scripts/keep-night.sh`, which files a night's runs among the nights the nightly
//! workflow carries from run to run: of every run folder two levels deep in each shard store it
//! keeps only what the history and a recheck read, follows no symlink out of a store, refuses a
//! night it cannot file, and prunes to the newest nights. No Docker: the stores are made here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const KEPT: [&str; 5] = ["results.json", "scenario.toml", "run.json", "history.jsonl", "report.html"];

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.github/scripts/keep-night.sh")
}

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("nights-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// keep-night.sh NIGHTS NIGHT SHARDS..., with KEEP_NIGHTS when given.
fn keep(nights: &Path, night: &str, shards: &[&Path], keep_nights: Option<&str>) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(script()).arg(nights).arg(night).args(shards).env_remove("KEEP_NIGHTS");
    if let Some(n) = keep_nights {
        cmd.env("KEEP_NIGHTS", n);
    }
    cmd.output().unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A run folder as a run leaves it: the kept files, each saying where it came from, and what is
/// to be left behind (logs, the parties' event files, a worker's config, a screenshot).
fn run_folder(dir: &Path) {
    for f in KEPT {
        write(&dir.join(f), &format!("{} {f}", dir.display()));
    }
    for f in [
        "logs/n1-redis.log",
        "logs/client-1.log",
        "workers/client-1.jsonl",
        "workers/client-1.config.json",
        "resource.jsonl",
        "nemesis.jsonl",
        "report.png",
    ] {
        write(&dir.join(f), "left behind");
    }
}

fn symlink(target: &Path, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Everything under `dir`, relative, sorted: folders end in `/`, symlinks are marked `@`.
fn entries(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = path.symlink_metadata().unwrap();
            if meta.file_type().is_symlink() {
                out.push(format!("{rel}@"));
            } else if meta.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &path, out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut out = vec![];
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The kept files of a run folder at `rel`, with the folder itself, as `entries` lists them.
fn kept(rel: &str, files: &[&str]) -> Vec<String> {
    let mut out = vec![format!("{rel}/")];
    out.extend(files.iter().map(|f| format!("{rel}/{f}")));
    out
}

#[test]
fn the_nightly_keep_night_keeps_only_what_the_history_reads_and_follows_no_symlink() {
    let dir = tempdir();
    let (one, two, outside) = (dir.path().join("shard-1"), dir.path().join("shard-2"), dir.path().join("outside"));

    // Outside the shard stores: a run folder, a scenario folder with a run, a page, a results.json.
    run_folder(&outside.join("etcd-baseline/20241231T000000Z"));
    run_folder(&outside.join("zookeeper-baseline/20241231T000000Z"));
    write(&outside.join("secret.html"), "outside");
    write(&outside.join("results.json"), "outside");

    // Shard 1: a finished run, one with no results.json (cut short), the store's own pages, its
    // `latest` link, and a folder two levels deep that is no run (a sweep).
    run_folder(&one.join("redis-single-pause/20250101T020000Z"));
    run_folder(&one.join("redis-single-pause/20250101T020100Z"));
    std::fs::remove_file(one.join("redis-single-pause/20250101T020100Z/results.json")).unwrap();
    write(&one.join("index.html"), "index");
    write(&one.join("junit.xml"), "junit");
    symlink(Path::new("redis-single-pause/20250101T020000Z"), &one.join("latest"));
    write(&one.join("sweeps/20250101T030000Z/sweep.json"), "{}");

    // Shard 2: a run that started in the same second as shard 1's (its folder has the same name),
    // a run whose report.html is a link out of the store, a run folder and a scenario folder that
    // are links out of it, and a run whose results.json is a link out of it.
    run_folder(&two.join("redis-single-pause/20250101T020000Z"));
    run_folder(&two.join("etcd-baseline/20250101T020500Z"));
    std::fs::remove_file(two.join("etcd-baseline/20250101T020500Z/report.html")).unwrap();
    symlink(&outside.join("secret.html"), &two.join("etcd-baseline/20250101T020500Z/report.html"));
    symlink(&outside.join("etcd-baseline/20241231T000000Z"), &two.join("etcd-baseline/20241231T000000Z"));
    symlink(&outside.join("zookeeper-baseline"), &two.join("zookeeper-baseline"));
    run_folder(&two.join("toy-lock-baseline/20250101T021000Z"));
    std::fs::remove_file(two.join("toy-lock-baseline/20250101T021000Z/results.json")).unwrap();
    symlink(&outside.join("results.json"), &two.join("toy-lock-baseline/20250101T021000Z/results.json"));

    let nights = dir.path().join("history/nights");
    let out = keep(&nights, "2025-01-01-41", &[&one, &two], None);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("kept 3 runs of 2025-01-01-41 (") && stdout.ends_with(")\n"), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(text(&out.stderr).contains("redis-single-pause/20250101T020100Z: no results.json"), "{}", text(&out.stderr));

    // Exactly the kept files of the three finished runs: shard 2's same-named run as -2, the
    // linked report left out, nothing else of any store and nothing from outside.
    let night = nights.join("2025-01-01-41");
    let mut expected = vec!["etcd-baseline/".to_string(), "redis-single-pause/".to_string()];
    expected.extend(kept("redis-single-pause/20250101T020000Z", &KEPT));
    expected.extend(kept("redis-single-pause/20250101T020000Z-2", &KEPT));
    expected.extend(kept("etcd-baseline/20250101T020500Z", &KEPT[..4]));
    expected.sort();
    assert_eq!(entries(&night), expected);
    // And nothing else among the nights: no hidden folder left from the copy.
    let mut all = vec!["2025-01-01-41/".to_string()];
    all.extend(entries(&night).iter().map(|e| format!("2025-01-01-41/{e}")));
    all.sort();
    assert_eq!(entries(&nights), all);

    // Each file is its own run's, copied, not linked.
    let from = |shard: &Path, rel: &str| {
        format!("{} {}", shard.join(rel).parent().unwrap().display(), Path::new(rel).file_name().unwrap().to_str().unwrap())
    };
    for (kept_as, shard, rel) in [
        ("redis-single-pause/20250101T020000Z/results.json", &one, "redis-single-pause/20250101T020000Z/results.json"),
        ("redis-single-pause/20250101T020000Z-2/results.json", &two, "redis-single-pause/20250101T020000Z/results.json"),
        ("etcd-baseline/20250101T020500Z/history.jsonl", &two, "etcd-baseline/20250101T020500Z/history.jsonl"),
    ] {
        assert_eq!(std::fs::read_to_string(night.join(kept_as)).unwrap(), from(shard, rel), "{kept_as}");
    }
    for e in entries(&night) {
        let path = night.join(e.trim_end_matches('/'));
        if path.is_file() {
            assert!(!std::fs::read_to_string(&path).unwrap().contains(&outside.display().to_string()), "{e} came from outside");
            assert_ne!(std::fs::read_to_string(&path).unwrap(), "outside", "{e} came from outside");
        }
    }
}

#[test]
fn the_nightly_keep_night_refuses_a_night_it_cannot_file() {
    let dir = tempdir();
    let shard = dir.path().join("shard-1");
    run_folder(&shard.join("redis-single-pause/20250102T020000Z"));
    let nights = dir.path().join("nights");
    let out = keep(&nights, "2025-01-02-7", &[&shard], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let before = entries(&nights);

    let empty = dir.path().join("empty-shard");
    std::fs::create_dir(&empty).unwrap();
    run_folder(&empty.join("etcd-baseline/20250103T020000Z"));
    std::fs::remove_file(empty.join("etcd-baseline/20250103T020000Z/results.json")).unwrap();
    let missing = dir.path().join("no-such-shard");
    for (night, shard, why) in [
        ("2025-01-02-7", &shard, "already exists"),
        ("2025-01-03-7/x", &shard, "not a path"),
        ("..", &shard, "'..'"),
        ("2025-01-03-..", &shard, "'..'"),
        ("", &shard, "starts with its date"),
        ("tonight", &shard, "starts with its date"),
        ("2025-01-03 7", &shard, "starts with its date"),
        ("2025-01-01-7", &shard, "sorts before '2025-01-02-7'"),
        ("2025-01-03-7", &empty, "no run folder with a results.json"),
        ("2025-01-03-7", &missing, "no shard store"),
    ] {
        let out = keep(&nights, night, &[shard], None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{night:?}: {}{stderr}", text(&out.stdout));
        let refusal: Vec<_> = stderr.lines().filter(|l| !l.contains("left out")).collect();
        assert_eq!(refusal.len(), 1, "{night:?}: one line: {stderr}");
        assert!(refusal[0].starts_with("keep-night: ") && refusal[0].contains(why), "{night:?}: {stderr}");
        assert!(text(&out.stdout).is_empty(), "{night:?}");
        // Nothing filed, nothing half filed, the night already there untouched.
        assert_eq!(entries(&nights), before, "{night:?}");
    }
    assert!(!dir.path().join("2025-01-03-7").exists() && !nights.join("2025-01-03-7").exists());
}

#[test]
fn the_nightly_keep_night_prunes_to_the_newest_nights() {
    let dir = tempdir();
    let shard = dir.path().join("shard-1");
    run_folder(&shard.join("redis-single-pause/20250101T020000Z"));
    let nights = dir.path().join("nights");
    // What a step cut short while copying left: hidden, and removed by the next night.
    write(&nights.join(".incoming-2024-12-31-1/redis-single-pause/x/results.json"), "{}");
    let names: Vec<String> = (1..=5).map(|d| format!("2025-01-0{d}-1{d}")).collect();
    for (i, name) in names.iter().enumerate() {
        let out = keep(&nights, name, &[&shard], Some("3"));
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        let mut expected: Vec<String> = if i >= 3 { vec![format!("pruned night {}", names[i - 3])] } else { vec![] };
        expected.push(format!("kept 1 run of {name} ("));
        let stdout = text(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), expected.len(), "{name}: {stdout}");
        for (line, want) in lines.iter().zip(&expected) {
            assert!(line.starts_with(want.as_str()), "{name}: {stdout}");
        }
    }
    let mut left: Vec<String> = std::fs::read_dir(&nights).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, names[2..], "the newest three, and nothing hidden");

    // Without KEEP_NIGHTS, 30 nights: the 31st night pushes the oldest out.
    let many = dir.path().join("many");
    for d in 1..=31 {
        let out = keep(&many, &format!("2025-03-{d:02}-1"), &[&shard], None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).contains("pruned night 2025-03-01-1"), d == 31, "night {d}: {}", text(&out.stdout));
    }
    assert_eq!(std::fs::read_dir(&many).unwrap().count(), 30);
    assert!(!many.join("2025-03-01-1").exists() && many.join("2025-03-02-1").is_dir() && many.join("2025-03-31-1").is_dir());
    assert!(std::fs::read_to_string(script()).unwrap().contains("keep_nights=\"${KEEP_NIGHTS:-30}\""));
}
