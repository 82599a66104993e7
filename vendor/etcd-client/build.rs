#[cfg(feature = "build-server")]
fn should_build_server() -> bool {
    true
}

#[cfg(not(feature = "build-server"))]
fn should_build_server() -> bool {
    false
}

fn main() {
    // lockchaos: protoc from the protoc-bin-vendored crate unless PROTOC names one, so that
    // `cargo build` alone builds this crate on a machine without a protoc package. prost-build
    // reads only PROTOC (or `protoc` on PATH), and a build script's environment can be set
    // only by itself, hence this copy of etcd-client with this one change.
    if std::env::var_os("PROTOC").is_none() {
        let protoc = protoc_bin_vendored::protoc_bin_path().expect("protoc-bin-vendored has a protoc for this platform");
        std::env::set_var("PROTOC", protoc);
    }
    let proto_root = "proto";
    println!("cargo:rerun-if-changed={proto_root}");

    tonic_prost_build::configure()
        .build_server(should_build_server())
        .compile_protos(
            &[
                "proto/etcd/api/authpb/auth.proto",
                "proto/etcd/api/etcdserverpb/rpc.proto",
                "proto/etcd/api/mvccpb/kv.proto",
                "proto/etcd/server/etcdserver/api/v3election/v3electionpb/v3election.proto",
                "proto/etcd/server/etcdserver/api/v3lock/v3lockpb/v3lock.proto",
            ],
            &[proto_root],
        )
        .expect("Failed to compile proto files");
}
