#!/bin/sh
# The cluster's TLS certificates, made with openssl (README: "Several nodes"): a CA, and for each NATS
# server a certificate for its addresses, which it shows to clients and to the other servers (routes).
#
#   sh make-certs.sh /etc/nats/tls nats-1:10.0.0.1 nats-2:10.0.0.2 nats-3:10.0.0.3
#
# writes ca.pem and ca.key (the CA: keep ca.key off the servers once the certificates are made) and, per
# server, NAME.pem and NAME.key (copy them to that server only). An address list may name several,
# comma-separated (nats-1:10.0.0.1,nats-1.example.com). Run again with a new name to add a server; the CA
# is kept. Plinth's nodes need ca.pem only (PLINTH_CLUSTER_NATS_CA).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DIR NAME:ADDRESS[,ADDRESS...] ..." >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir"
cd "$dir"
umask 077
if [ ! -f ca.pem ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
    -days 3650 -subj /CN=plinth-nats-ca 2>/dev/null
fi
for server in "$@"; do
  name=${server%%:*}
  names=
  for address in $(echo "${server#*:}" | tr , ' '); do
    case $address in
      *[!0-9.:]*) names="${names:+$names,}DNS:$address" ;;
      *) names="${names:+$names,}IP:$address" ;;
    esac
  done
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$names" > "$name.ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$name" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$name.pem" -days 825 -extfile "$name.ext" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
done
chmod 644 ca.pem *.pem
