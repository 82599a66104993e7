#!/bin/sh
# Which signals make `etcdctl lock` (etcd-client 3.4.23) unlock and exit? Holds a lock, sends
# one signal, and shows the exit code and whether the lock key is still there; then the same
# for a waiter (SIGTERM while queued) and for SIGHUP. Usage: etcdctl_signals.sh HOST:PORT
E="--endpoints=${1:?usage: $0 HOST:PORT}"
T=$(mktemp -d)
etcdctl version | head -1
for sig in INT TERM HUP; do
  etcdctl $E lock --ttl=5 "sig-$sig" >"$T/out" 2>"$T/err" &
  p=$!
  sleep 1
  echo "holder SIG$sig: printed [$(tr '\n' '|' <"$T/out")]; keys before: $(etcdctl $E get --prefix "sig-$sig" --keys-only | tr -s '\n' ' ')"
  kill -"$sig" $p
  wait $p
  echo "  exit $?, stderr [$(cat "$T/err")], keys after: [$(etcdctl $E get --prefix "sig-$sig" --keys-only | tr -s '\n' ' ')]"
done
etcdctl $E lock --ttl=5 sig-wait >/dev/null 2>&1 &
h=$!
sleep 0.5
etcdctl $E lock --ttl=5 sig-wait >"$T/out" 2>"$T/err" &
w=$!
sleep 1
echo "waiter SIGTERM: printed [$(cat "$T/out")]; keys before: $(etcdctl $E get --prefix sig-wait --keys-only | tr -s '\n' ' ')"
kill -TERM $w
wait $w
echo "  exit $?, stderr [$(cat "$T/err")], keys after: $(etcdctl $E get --prefix sig-wait --keys-only | tr -s '\n' ' ')"
kill -TERM $h
wait $h
echo "SIGHUP's key 6 s later (lease TTL 5 s): [$(sleep 6; etcdctl $E get --prefix sig-HUP --keys-only)]"
rm -r "$T"
