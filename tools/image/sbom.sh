#!/bin/sh
# Writes to stdout an SPDX 2.3 JSON document of the image it runs in:
#
#   sbom.sh VERSION BINARY...
#
# One package per installed Debian package (dpkg-query: name, version, architecture, the source
# package, Debian as supplier, a purl pkg:deb/debian/NAME@VERSION?arch=ARCH&distro=debian-N)
# and one per BINARY of the project (version VERSION, its SHA-256), all contained in a package
# for the image itself. Licenses are NOASSERTION (Debian's copyright files are not machine
# readable enough to conclude one). POSIX sh, awk, dpkg-query and coreutils: what
# debian:bookworm-slim has. SOURCE_DATE_EPOCH, when set, is the creation time.
set -eu

[ $# -ge 2 ] || {
  echo "usage: sbom.sh VERSION BINARY..." >&2
  exit 1
}
version=$1
shift

# debian-12 (purl's distro qualifier) from os-release.
distro=$(. /etc/os-release && printf '%s-%s' "${ID:-debian}" "${VERSION_ID:-unknown}")
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
else
  created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
fi

# One tab-separated record per package: kind, name, version, arch, source, source version,
# sha256.
records=$(
  dpkg-query -W -f '${db:Status-Abbrev}\t${Package}\t${Version}\t${Architecture}\t${source:Package}\t${source:Version}\n' |
    awk -F '\t' '$1 ~ /^ii/ { OFS = "\t"; print "deb", $2, $3, $4, $5, $6, "" }' | LC_ALL=C sort -t "$(printf '\t')" -k2,2 -k4,4
  for b in "$@"; do
    [ -f "$b" ] || {
      echo "sbom.sh: no file $b" >&2
      exit 1
    }
    printf 'bin\t%s\t%s\t\t\t\t%s\n' "${b##*/}" "$version" "$(sha256sum "$b" | cut -d ' ' -f 1)"
  done
)
# The namespace must be unique per document: the content's hash.
digest=$(printf '%s\n' "$records" | sha256sum | cut -c1-32)

printf '%s\n' "$records" | LC_ALL=C awk -F '\t' -v version="$version" -v distro="$distro" \
  -v created="$created" -v digest="$digest" '
function esc(s) { # JSON string contents
  gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, "\\t", s); gsub(/\r/, "\\r", s)
  gsub(/[\001-\037]/, "", s)
  return s
}
function pct(s,    out, i, c) { # purl component: percent-encode all but unreserved and ":"
  out = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (c ~ /[A-Za-z0-9.~_:-]/) out = out c
    else out = out sprintf("%%%02X", ord[c])
  }
  return out
}
function spdxid(s) { # SPDXRef-... allows letters, digits, "." and "-"
  gsub(/[^A-Za-z0-9.-]/, "-", s)
  while (s in used) s = s "-x"
  used[s] = 1
  return s
}
function pkg(id, name, ver, extra) {
  printf "%s    {\n      \"SPDXID\": \"%s\",\n      \"name\": \"%s\",\n      \"versionInfo\": \"%s\",\n", (npkg++ ? ",\n" : ""), id, esc(name), esc(ver)
  printf "%s", extra
  printf "      \"downloadLocation\": \"NOASSERTION\",\n      \"filesAnalyzed\": false,\n"
  printf "      \"licenseConcluded\": \"NOASSERTION\",\n      \"licenseDeclared\": \"NOASSERTION\",\n      \"copyrightText\": \"NOASSERTION\""
}
BEGIN {
  for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i
  printf "{\n  \"spdxVersion\": \"SPDX-2.3\",\n  \"dataLicense\": \"CC0-1.0\",\n  \"SPDXID\": \"SPDXRef-DOCUMENT\",\n"
  printf "  \"name\": \"kube-extended-resource-%s\",\n", esc(version)
  printf "  \"documentNamespace\": \"https://spdx.org/spdxdocs/kube-extended-resource-%s-%s\",\n", pct(version), digest
  printf "  \"creationInfo\": {\n    \"created\": \"%s\",\n    \"creators\": [\"Tool: kube-extended-resource-sbom.sh\"]\n  },\n", created
  printf "  \"packages\": [\n"
  image = "SPDXRef-image"
  used[image] = 1
  pkg(image, "kube-extended-resource", version, "      \"primaryPackagePurpose\": \"CONTAINER\",\n      \"supplier\": \"NOASSERTION\",\n")
  printf "\n    }"
  nrel = 0
}
$1 == "deb" {
  id = spdxid("SPDXRef-deb-" $2 "-" $4)
  purl = "pkg:deb/debian/" pct($2) "@" pct($3) "?arch=" pct($4) "&distro=" pct(distro)
  src = ($5 != "" ? $5 : $2) " " ($6 != "" ? $6 : $3)
  extra = "      \"supplier\": \"Organization: Debian\",\n" \
    "      \"sourceInfo\": \"built from the Debian source package " esc(src) "\",\n"
  pkg(id, $2, $3, extra)
  printf ",\n      \"externalRefs\": [\n        {\n          \"referenceCategory\": \"PACKAGE-MANAGER\",\n"
  printf "          \"referenceType\": \"purl\",\n          \"referenceLocator\": \"%s\"\n        }\n      ]\n    }", esc(purl)
  rel[nrel++] = id
  next
}
$1 == "bin" {
  id = spdxid("SPDXRef-bin-" $2)
  extra = "      \"primaryPackagePurpose\": \"APPLICATION\",\n      \"supplier\": \"NOASSERTION\",\n" \
    "      \"checksums\": [{\"algorithm\": \"SHA256\", \"checksumValue\": \"" $7 "\"}],\n"
  pkg(id, $2, $3, extra)
  printf ",\n      \"externalRefs\": [\n        {\n          \"referenceCategory\": \"PACKAGE-MANAGER\",\n"
  printf "          \"referenceType\": \"purl\",\n          \"referenceLocator\": \"pkg:generic/kube-extended-resource/%s@%s\"\n        }\n      ]\n    }", pct($2), pct($3)
  rel[nrel++] = id
  next
}
END {
  printf "\n  ],\n  \"relationships\": [\n"
  printf "    {\"spdxElementId\": \"SPDXRef-DOCUMENT\", \"relationshipType\": \"DESCRIBES\", \"relatedSpdxElement\": \"%s\"}", image
  for (i = 0; i < nrel; i++)
    printf ",\n    {\"spdxElementId\": \"%s\", \"relationshipType\": \"CONTAINS\", \"relatedSpdxElement\": \"%s\"}", image, rel[i]
  printf "\n  ]\n}\n"
}'
