#!/bin/sh
# A cluster of three Plinth nodes on one machine, to try it (README: "Several nodes"): three NATS servers
# (one cluster, JetStream on), nodes a, b and c, and HAProxy in front with deploy/cluster/haproxy.cfg.
# Needs nats-server, haproxy, openssl and curl (Debian: apt-get install nats-server haproxy openssl curl)
# and a built Plinth (npm ci && npm run build). From the repository:
#
#   sh deploy/cluster/on-one-machine.sh
#
# Everything it makes stays in $PLINTH_TRY_DIR (./cluster-try): the nodes' data directories and logs, the
# NATS servers' stores and the installation's secret. Ports from $PLINTH_TRY_PORT (8080): HAProxy on it,
# the nodes on the next three, NATS on +11 to +13 and its routes on +21 to +23, all on 127.0.0.1. NATS
# on loopback runs without TLS and users, which Plinth allows on loopback only (across machines: "Three
# machines"). Ctrl-C stops everything; run it again and the cluster goes on from where it was.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${PLINTH_TRY_DIR:-./cluster-try}
port=${PLINTH_TRY_PORT:-8080}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
umask 077

# Stopped in order: HAProxy and the nodes first (each closes its database and gives up its lease and name
# through NATS), then the NATS servers.
pids=""
nats=""
stop() {
  trap '' INT TERM
  trap - EXIT
  # shellcheck disable=SC2086
  [ -z "$pids" ] || kill $pids 2>/dev/null || true
  for pid in $pids; do wait "$pid" 2>/dev/null || true; done
  # shellcheck disable=SC2086
  [ -z "$nats" ] || kill $nats 2>/dev/null || true
  wait
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# Three NATS servers, one cluster, JetStream on: the log, the lease and the files live there, three copies each.
for i in 1 2 3; do
  cat >"$dir/nats-$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:$((port + 10 + i))
jetstream { store_dir: "$dir/nats-$i" }
cluster { name: plinth, listen: 127.0.0.1:$((port + 20 + i)), routes: [nats://127.0.0.1:$((port + 21)), nats://127.0.0.1:$((port + 22)), nats://127.0.0.1:$((port + 23))] }
EOF
  nats-server -c "$dir/nats-$i.conf" >"$dir/nats-$i.log" 2>&1 &
  nats="$nats $!"
done

# The installation's secret: made once, the same file for every node (keep a copy apart from backups).
[ -s "$dir/installation.key" ] || openssl rand -hex 32 >"$dir/installation.key"

# What every node is given: the NATS servers, the secret, and the one address clients reach the cluster
# at (HAProxy's), which every URL the API returns names, whichever node leads.
export PLINTH_CLUSTER_NATS="127.0.0.1:$((port + 11)),127.0.0.1:$((port + 12)),127.0.0.1:$((port + 13))"
export PLINTH_SECRET_FILE="$dir/installation.key"
export PLINTH_API_ORIGIN="http://localhost:$port"
export PLINTH_TRUSTED_PROXIES=127.0.0.1
export HOST=127.0.0.1

# The three nodes, started together: one of them takes the lease and leads; the first start's primary
# makes the installation and prints the admin API key and the owner's setup link (once, to its output).
n=0
for node in a b c; do
  n=$((n + 1))
  PORT=$((port + n)) PLINTH_DATA_DIR="$dir/node-$node" PLINTH_NODE_NAME=$node PLINTH_NODE_URL="http://127.0.0.1:$((port + n))" \
    node --no-node-snapshot --max-semi-space-size=32 "$root/dist/bin/plinth.js" start >"$dir/node-$node.out" 2>"$dir/node-$node.log" &
  pids="$pids $!"
  # To see a failover: kill -9 "$(cat cluster-try/node-a.pid)" (the node that leads), and watch the others.
  echo $! >"$dir/node-$node.pid"
done

# HAProxy in front, as deploy/cluster/haproxy.cfg is written.
PLINTH_LB_BIND="127.0.0.1:$port" PLINTH_NODE_A="127.0.0.1:$((port + 1))" PLINTH_NODE_B="127.0.0.1:$((port + 2))" \
  PLINTH_NODE_C="127.0.0.1:$((port + 3))" haproxy -f "$here/haproxy.cfg" -db >"$dir/haproxy.log" 2>&1 &
pids="$pids $!"

# Up when every node answers its health check through its own port, and HAProxy answers.
waited=0
until curl -fsS "http://127.0.0.1:$((port + 1))/_platform/health" >/dev/null 2>&1 &&
  curl -fsS "http://127.0.0.1:$((port + 2))/_platform/health" >/dev/null 2>&1 &&
  curl -fsS "http://127.0.0.1:$((port + 3))/_platform/health" >/dev/null 2>&1 &&
  curl -fsS "http://127.0.0.1:$port/_platform/health" >/dev/null 2>&1; do
  waited=$((waited + 1))
  if [ $waited -gt 120 ]; then
    echo "the cluster did not come up within a minute; see $dir/*.log" >&2
    exit 1
  fi
  sleep 0.5
done

leader=$(curl -fsS "http://127.0.0.1:$port/_platform/health" | sed -n 's/.*"primary":"\([a-z0-9-]*\)".*/\1/p')
echo "A Plinth cluster on one machine is up:"
echo "  API and dashboard   http://localhost:$port (HAProxy, to every node), sites at http://{sub}.localhost:$port"
echo "  nodes               a, b and c on ports $((port + 1))-$((port + 3)); node $leader leads"
echo "  logs                $dir/node-{a,b,c}.log, nats-{1,2,3}.log, haproxy.log; process ids in node-{a,b,c}.pid"
first=$(grep -l 'Created organization' "$dir"/node-?.out 2>/dev/null | head -1 || true)
if [ -n "$first" ]; then
  echo "  node $(basename "$first" .out | sed 's/node-//') made the installation (its first start): the admin API key and the owner's setup link, shown once:"
  grep -E '^(Admin API key|Owner setup link)' "$first" | sed 's/^/    /'
  # Shown once: not kept in the node's output file.
  sed -i -E '/^(Admin API key|Owner setup link)/d' "$first"
else
  echo "  the admin API key and the owner's setup link were shown at the cluster's first start"
fi
echo "Ctrl-C stops the cluster."
wait
