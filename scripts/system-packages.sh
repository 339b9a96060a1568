#!/usr/bin/env bash
# What the test suite needs from the system beyond `npm ci`, in one list (`npm test` and .ci/run call this):
# Debian's Chromium drives the dashboard tests (playwright-core never downloads a browser); nginx stands
# in front of Plinth in the proxy test and beside it in the benchmarks; caddy is the TLS front; prometheus
# scrapes /metrics; varnish with varnish-modules' xkey is the cache tier; wrk times the benchmarks;
# nats-server (JetStream, TLS certificates from openssl) carries the cluster tests, haproxy balances
# deploy/cluster's examples (curl waits for them in on-one-machine.sh) and iproute2 makes the fault tests'
# network namespaces.
# Missing ones are installed when this runs as root on Debian (RUNLEVEL=1: no service starts); otherwise
# it stops, before any test, with the command to run.
set -euo pipefail

# package name, then the file that shows it is installed
NEEDS=(
  "chromium /usr/bin/chromium"
  "nginx /usr/sbin/nginx"
  "caddy /usr/bin/caddy"
  "prometheus /usr/bin/prometheus"
  "varnish /usr/sbin/varnishd"
  "varnish-modules /usr/lib/*/varnish/vmods/libvmod_xkey.so"
  "wrk /usr/bin/wrk"
  "nats-server /usr/sbin/nats-server /usr/bin/nats-server"
  "openssl /usr/bin/openssl"
  "haproxy /usr/sbin/haproxy"
  "curl /usr/bin/curl"
  "iproute2 /usr/sbin/ip /usr/bin/ip /sbin/ip /bin/ip"
)

missing=()
for need in "${NEEDS[@]}"; do
  read -r package paths <<<"$need"
  found=no
  for path in $paths; do
    # A glob (varnish-modules' architecture directory) matches or stays as written.
    for file in $path; do [ -e "$file" ] && found=yes; done
  done
  [ "$found" = yes ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

command="apt-get update && RUNLEVEL=1 apt-get install -y ${missing[*]}"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing what the tests need from Debian: ${missing[*]}" >&2
  apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "The tests need these Debian packages, which are missing: ${missing[*]}" >&2
echo "Install them (as root), then run npm test again:" >&2
echo "  $command" >&2
exit 1
