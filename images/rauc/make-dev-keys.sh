#!/usr/bin/env bash
# Development keys for RAUC bundles: a CA (the keyring the image trusts) and a signing
# certificate under it with the codeSigning extended key usage (system.conf's
# check-purpose=codesign refuses a signer without it).
#
#   images/rauc/make-dev-keys.sh [DIR]      (default: images/rauc/dev-keys, git-ignored)
#
# Writes ca.cert.pem (the keyring), ca.key.pem, signing.cert.pem, signing.key.pem.
# Every subject carries the marker "fpgagdr-development-key": the layer's bundle and
# rauc-conf recipes refuse a certificate with that marker when FPGAGDR_RELEASE = "1"
# (docs/ota.md). Production keys are made and kept outside the repository (an HSM or an
# offline machine); never commit a key.
# Existing files are kept unless --force is given. Needs openssl.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
dir=${1:-$here/dev-keys}
marker="fpgagdr-development-key"
days=${FPGAGDR_DEV_KEY_DAYS:-3650}

command -v openssl >/dev/null || { echo "make-dev-keys: openssl is needed" >&2; exit 1; }
if [ -e "$dir/signing.cert.pem" ] && [ "$force" = 0 ]; then
  echo "make-dev-keys: $dir already has keys (--force replaces them)"
  exit 0
fi
mkdir -p "$dir"
chmod 0700 "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/openssl.cnf" <<CNF
[req]
distinguished_name = dn
prompt = no
[dn]
O = $marker
CN = unused
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[signing_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF

openssl req -x509 -newkey rsa:3072 -nodes -config "$tmp/openssl.cnf" -extensions ca_ext \
  -subj "/O=$marker/CN=fpgagdr development CA" -days "$days" \
  -keyout "$dir/ca.key.pem" -out "$dir/ca.cert.pem" 2>/dev/null
openssl req -newkey rsa:3072 -nodes -config "$tmp/openssl.cnf" \
  -subj "/O=$marker/CN=fpgagdr development signing" \
  -keyout "$dir/signing.key.pem" -out "$tmp/signing.csr" 2>/dev/null
openssl x509 -req -in "$tmp/signing.csr" -CA "$dir/ca.cert.pem" -CAkey "$dir/ca.key.pem" \
  -CAcreateserial -CAserial "$tmp/ca.srl" -days "$days" \
  -extfile "$tmp/openssl.cnf" -extensions signing_ext -out "$dir/signing.cert.pem" 2>/dev/null
chmod 0600 "$dir/ca.key.pem" "$dir/signing.key.pem"
echo "make-dev-keys: development keys in $dir (never for a release build)"
