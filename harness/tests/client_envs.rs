//! Client environments in real runs: each kind (pip requirements from PyPI, a Go program built
//! with Debian's Go, a Java program built with Debian's JDK) built cold, then reused by the next
//! run without a rebuild, then rebuilt after a change to what goes into it; a failing build and
//! a missing tool are one line each, and no run starts.
//!
//! Each test's project gets a nonce in the files it changes, so its first build is cold whatever
//! the machine has cached; the packages stage below a build (Debian's Go, the JDK) is shared
//! with the shipped scenarios and stays cached across tests and runs. The images a test made
//! are removed at its end.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A project folder with the repository's `clients/` files named, and one scenario.
fn project(copied: &[&str], scenario: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("scenarios")).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in copied {
        let to = dir.path().join("clients").join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo.join("clients").join(name), &to).unwrap();
    }
    let file = dir.path().join("scenarios/env.toml");
    std::fs::write(&file, scenario).unwrap();
    (dir, file)
}

/// Runs the binary on a scenario file: exit code, output, and run.json when the run started.
fn run_binary(file: &Path, store: &Path) -> (Option<i32>, String, Option<Value>) {
    let (code, text) = common::run_cli(file, store);
    let run = std::fs::read_to_string(store.join("latest/run.json")).ok().map(|t| serde_json::from_str(&t).unwrap());
    (code, text, run)
}

/// One run that must be safe: the image its clients ran in and the stages it built.
fn safe_run(file: &Path, store: &Path) -> (String, Vec<String>) {
    let _ = std::fs::remove_file(store.join("latest"));
    let (code, text, run) = run_binary(file, store);
    assert_eq!(code, Some(0), "{text}");
    let env = &run.unwrap_or_else(|| panic!("no run.json: {text}"))["client_env"];
    let built = env["built"].as_array().unwrap_or_else(|| panic!("no client environment in run.json: {env}"));
    (env["image"].as_str().unwrap().to_string(), built.iter().map(|s| s.as_str().unwrap().to_string()).collect())
}

/// Removes the images a test built (its environments' last stages).
fn remove_images(images: &[&str]) {
    for image in images {
        let _ = Command::new("docker").args(["rmi", image]).output();
    }
}

fn nonce() -> String {
    format!("{:x}", rand::random::<u64>())
}

/// What a client's log says (client-1's, of the latest run).
fn client_log(store: &Path) -> String {
    std::fs::read_to_string(store.join("latest/logs/client-1.log")).unwrap_or_default()
}

/// The file of a project whose edit the third run must see: its path under `clients/`, and its
/// text when it is not one of the repository's.
struct Changed<'a>(&'a str, Option<&'a str>);

/// Three runs of one scenario whose environment's inputs include `changed`: cold (it builds
/// `cold`), again (nothing built, the same image), and after a new nonce in `changed` (it builds
/// `rebuilt`, a new image). Each must be safe, and client-1's log must say `says`.
fn built_reused_rebuilt(files: &[&str], scenario: &str, changed: Changed, says: &str, cold: &str, rebuilt: &[&str]) {
    let (dir, file) = project(files, scenario);
    let Changed(name, given) = changed;
    let changed = dir.path().join("clients").join(name);
    let text = given.map(String::from).unwrap_or_else(|| std::fs::read_to_string(&changed).unwrap());
    let comment = if changed.extension().is_some_and(|e| e == "txt") { "#" } else { "//" };
    let stamp = || std::fs::write(&changed, format!("{text}\n{comment} {}\n", nonce())).unwrap();
    stamp();
    let store = dir.path().join("store");

    let (first, built) = safe_run(&file, &store);
    assert_eq!(built.last().map(String::as_str), Some(cold), "a cold build");
    assert!(client_log(&store).contains(says), "{}", client_log(&store));

    let (again, built) = safe_run(&file, &store);
    assert_eq!((again.as_str(), built.len()), (first.as_str(), 0), "the next run reuses it");

    stamp();
    let (changed, built) = safe_run(&file, &store);
    assert_eq!(built, rebuilt, "a change rebuilds what it goes into, and no more");
    assert_ne!(changed, first);
    remove_images(&[&first, &changed]);
}

const REDIS_PY: &str = "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\nclients = 2\ntime_limit_secs = 10\n\
    [client]\ncommand = [\"python3\", \"clients/redis_py_lock.py\"]\nrequirements = \"clients/requirements.txt\"\n\
    [lock]\nttl_ms = 2000\nacquire_timeout_ms = 5000\n[workload]\nwork_ms = 50\nthink_ms = 20\n";

#[test]
fn a_pip_requirement_is_built_once_reused_and_rebuilt_when_it_changes() {
    let files = ["redis_py_lock.py", "redis_io.py", "protocol_io.py"];
    let requirements = Changed("requirements.txt", Some("redis==8.2.0"));
    // The node image's python3-redis is 4.3.4: the program imports PyPI's 8.2.0.
    built_reused_rebuilt(&files, REDIS_PY, requirements, "redis-py 8.2.0", "packages", &["packages"]);
}

const GO_ETCD: &str = "description = \"d\"\nexpect = \"safe\"\nbackend = \"etcd\"\nclients = 2\ntime_limit_secs = 10\n\
    [client]\ndebian = [\"golang-go\", \"golang-etcd-server-dev\"]\n\
    build = [\"env\", \"GO111MODULE=off\", \"GOPATH=/usr/share/gocode\", \"go\", \"build\", \"-o\", \"/out/etcd-mutex\", \"./clients/go-etcd-mutex\"]\n\
    sources = [\"clients/go-etcd-mutex\"]\ncommand = [\"/out/etcd-mutex\"]\n\
    [lock]\nttl_ms = 2000\nacquire_timeout_ms = 5000\n[workload]\nwork_ms = 50\nthink_ms = 20\n";

/// An edited source recompiles on the cached packages (Debian's Go): the build stage alone.
#[test]
fn a_go_program_is_compiled_once_reused_and_only_recompiled_when_its_source_changes() {
    let main = "go-etcd-mutex/main.go";
    built_reused_rebuilt(&[main], GO_ETCD, Changed(main, None), "go-etcd-mutex: client-1", "build", &["build"]);
}

const JAVA_PG: &str = "description = \"d\"\nexpect = \"safe\"\nbackend = \"postgres-session\"\nclients = 2\ntime_limit_secs = 10\n\
    [client]\ndebian = [\"default-jdk-headless\", \"libpostgresql-jdbc-java\", \"libgoogle-gson-java\"]\n\
    build = [\"javac\", \"-cp\", \"/usr/share/java/postgresql.jar:/usr/share/java/gson.jar\", \"-d\", \"/out\", \"clients/java-pg-advisory/PgAdvisoryLock.java\"]\n\
    sources = [\"clients/java-pg-advisory\"]\n\
    command = [\"java\", \"-cp\", \"/out:/usr/share/java/postgresql.jar:/usr/share/java/gson.jar\", \"PgAdvisoryLock\"]\n\
    [lock]\nacquire_timeout_ms = 5000\nretry_ms = 20\n[workload]\nwork_ms = 50\nthink_ms = 20\n";

/// As for Go: the JDK and the jars stay cached; an edited source is compiled again.
#[test]
fn a_java_program_is_compiled_once_reused_and_only_recompiled_when_its_source_changes() {
    let file = "java-pg-advisory/PgAdvisoryLock.java";
    built_reused_rebuilt(&[file], JAVA_PG, Changed(file, None), "java-pg-advisory: client-1", "build", &["build"]);
}

/// A scenario whose environment is only `build`, with the node image's toy client.
fn build_only(build: &str) -> String {
    format!(
        "description = \"d\"\nexpect = \"safe\"\nbackend = \"redis-single\"\nclients = 1\ntime_limit_secs = 2\n\
         [client]\nbuild = {build}\ncommand = [\"python3\", \"clients/toy_lock.py\"]\n"
    )
}

#[test]
fn a_failing_build_and_a_missing_tool_are_one_line_each_and_no_run_starts() {
    let failing = build_only(&format!(
        "[\"sh\", \"-c\", \"echo compiling {}; echo 'main.c:3: error: expected ; before }}' >&2; echo done >&2; exit 3\"]",
        nonce()
    ));
    let missing = build_only(&format!("[\"go\", \"build\", \"-o\", \"/out/x{}\", \"./clients\"]", nonce()));
    let cases = [
        (failing, "step `build` failed (exit 3): main.c:3: error: expected ; before }"),
        (missing, "step `build`: `go` is not in the environment; add its Debian package to [client] debian (`go` is in golang-go)"),
    ];
    for (scenario, expected) in cases {
        let (dir, file) = project(&["toy_lock.py"], &scenario);
        let store = dir.path().join("store");
        let (code, text, run) = run_binary(&file, &store);
        assert_ne!(code, Some(0), "{text}");
        let line = text.lines().find(|l| l.contains(expected)).unwrap_or_else(|| panic!("no line with `{expected}` in:\n{text}"));
        assert!(line.contains("scenario env: building the client environment lockchaos-client-env:"), "{line}");
        // The whole log is kept, and named.
        let log = line.rsplit_once("(whole log: ").map(|(_, l)| l.trim_end_matches(')')).unwrap();
        assert!(std::fs::read_to_string(log).unwrap().contains("== build:"), "{log}");
        assert!(run.is_none() && !store.join("env").exists(), "no run started: {text}");
    }
}
