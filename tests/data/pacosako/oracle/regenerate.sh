#!/bin/sh
# Rebuilds tests/data/pacosako/oracle/oracle.jsonl.gz from the public engine (README.md here).
# Run from the repository root. Needs git, cargo/rustc (tested with 1.95) and Debian's crate
# sources (no network access to crates.io is needed):
#   apt-get install librust-rand-dev librust-nom-dev librust-serde-dev librust-serde-derive-dev \
#     librust-serde-json-dev librust-thiserror-dev librust-lazy-regex-dev librust-lazy-static-dev \
#     librust-fxhash-dev librust-smallvec-dev librust-rand-distr-dev librust-async-trait-dev \
#     librust-petgraph-dev librust-bincode-dev
set -eu
ENGINE_GIT=${ENGINE_GIT:-/work/.mirror/kreibaum+pacosako/repo}  # a clone of kreibaum/pacosako
COMMIT=5ecb8c143b8e0c7f7133523cab56ccf0a49781ab
WORK=${WORK:-/tmp/pacoengine}
HERE=tests/data/pacosako/oracle
PY=${PY:-python}

rm -rf "$WORK" && mkdir -p "$WORK/.cargo" "$WORK/oracle"
# the engine's lib/ (file by file: the snapshot lacks some large blobs outside lib/src)
for f in $(git -C "$ENGINE_GIT" ls-tree -r --name-only "$COMMIT" lib/Cargo.toml lib/src); do
    mkdir -p "$WORK/$(dirname "$f")"
    git -C "$ENGINE_GIT" show "$COMMIT:$f" > "$WORK/$f"
done
cat > "$WORK/.cargo/config.toml" <<'CFG'
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
CFG
# local patches: versions Debian has, no wasm crates (unused by the rules), no dev-dependencies,
# and the engine's threat search made public for the driver
cd "$WORK/lib"
sed -i -e 's/crate-type = \["cdylib", "rlib"\]/crate-type = ["rlib"]/' \
    -e 's/lazy-regex = "3.0.1"/lazy-regex = "2"/' -e 's/smallvec = "1.10.0"/smallvec = "1.9"/' \
    -e 's/async-trait = "0.1.60"/async-trait = "0.1.56"/' \
    -e '/^js-sys/d' -e '/^wasm-bindgen-futures/d' -e '/^\[dev-dependencies\]/,$d' Cargo.toml
sed -i 's/^fn determine_all_threats</pub fn determine_all_threats</' src/lib.rs
cd - > /dev/null
cp -r "$HERE/Cargo.toml" "$HERE/src" "$WORK/oracle/"
(cd "$WORK/oracle" && cargo build --offline --release)
$PY "$HERE/make_jobs.py"
"$WORK/oracle/target/release/paco-oracle" "$HERE/jobs.json" | gzip -9 -n > "$HERE/oracle.jsonl.gz"
