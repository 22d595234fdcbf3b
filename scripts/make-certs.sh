#!/usr/bin/env bash
# Makes a certificate authority and one certificate per party with Debian's
# openssl, for running the services over mutual TLS (docs/security.md).
#
#   scripts/make-certs.sh DIR [HOST ...]
#
# DIR/ca.crt, ca.key            the CA (keep ca.key offline in production)
# DIR/scorer.crt, .key          OU=scorer       CN=memaudit-scorer
# DIR/coordinator.crt, .key     OU=coordinator  CN=memaudit-coordinator
# DIR/NAME.crt, .key            OU=worker       CN=NAME, for each NAME in $MEMAUDIT_WORKERS
#                               (default: "worker-0 worker-1"; each starts with
#                               "worker-"): one identity per
#                               worker, so that no worker can act on another's
#                               worker id or leases (bound to the identity)
# DIR/admin.crt, .key           OU=admin        CN=admin
# DIR/team-NAME.crt, .key       OU=team         CN=NAME, for each NAME in $MEMAUDIT_TEAMS
#                               (default: "demo")
# DIR/capability.key            the coordinator's and scorer's shared key for task
#                               capabilities (--capability-key-file; 256 bits, hex)
# Every certificate names localhost, 127.0.0.1, the services' Kubernetes names
# (memaudit-scorer, memaudit-coordinator, with and without .memaudit.svc) and
# each HOST given, so one set serves a laptop and a cluster. Valid 365 days
# ($MEMAUDIT_CERT_DAYS).
set -euo pipefail
dir="${1:?usage: make-certs.sh DIR [HOST ...]}"
shift
days="${MEMAUDIT_CERT_DAYS:-365}"
# Each worker's name is its certificate's CN and part of a file name.
read -ra workers <<<"${MEMAUDIT_WORKERS:-worker-0 worker-1}"
for worker in "${workers[@]}"; do
  [[ "$worker" =~ ^worker-[A-Za-z0-9._-]{1,57}$ ]] || {
    echo "make-certs.sh: MEMAUDIT_WORKERS: \"$worker\" is not worker- and a name (letters, digits, '.', '_', '-'; at most 64 in all)" >&2
    exit 2
  }
done
mkdir -p "$dir"
cd "$dir"
umask 077

sans="DNS:localhost,IP:127.0.0.1"
for name in memaudit-scorer memaudit-coordinator; do
  sans="$sans,DNS:$name,DNS:$name.memaudit.svc,DNS:$name.memaudit.svc.cluster.local"
done
for host in "$@"; do
  if [[ "$host" =~ ^[0-9.]+$ ]]; then sans="$sans,IP:$host"; else sans="$sans,DNS:$host"; fi
done

ec() { echo "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"; }

if [ ! -f ca.key ]; then
  # shellcheck disable=SC2046
  openssl req -x509 $(ec) -days "$days" -subj "/O=memaudit/CN=memaudit CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.crt 2>/dev/null
fi

issue() {  # FILE ROLE NAME
  local file="$1" role="$2" name="$3"
  # shellcheck disable=SC2046
  openssl req $(ec) -subj "/OU=$role/CN=$name" -keyout "$file.key" -out "$file.csr" 2>/dev/null
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=%s\n' \
    "$sans" >"$file.ext"
  openssl x509 -req -in "$file.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile "$file.ext" -out "$file.crt" 2>/dev/null
  rm -f "$file.csr" "$file.ext"
}

issue scorer scorer memaudit-scorer
issue coordinator coordinator memaudit-coordinator
for worker in "${workers[@]}"; do
  issue "$worker" worker "$worker"
done
issue admin admin admin
for team in ${MEMAUDIT_TEAMS:-demo}; do
  issue "team-$team" team "$team"
done
[ -f capability.key ] || openssl rand -hex 32 >capability.key
chmod 644 ./*.crt
echo "certificates in $dir: $(ls ./*.crt | tr '\n' ' ')"
