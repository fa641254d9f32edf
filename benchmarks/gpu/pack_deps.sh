#!/usr/bin/env bash
# Pack the Python packages an offline GPU machine lacks for the GPU check, in parts that
# fit transfers of at most LIMIT_MB each (together with this checkout).
#
#   bash benchmarks/gpu/pack_deps.sh            # writes .gpu-deps1, .gpu-deps2, ... here
#
# The packages (warp-lang, mujoco, mujoco-warp, newton, rsl-rl-lib, tensordict, gymnasium and what
# they need beyond torch, numpy and onnx) are downloaded as wheels for PY_VERSION, unpacked
# into one folder and compressed with xz (warp's 149 MB wheel packs to about 100 MB: xz
# takes 30% off what zip leaves; all together about 116 MB), then split. On the machine,
# copy each part to one folder as it arrives (a transfer need not keep the previous one's
# files in the checkout), then:
#
#   cat <parts in order> | xz -d | tar -x -C /tmp/site; export PYTHONPATH=/tmp/site
#
# benchmarks/gpu/check_call1.sh and check_call2.sh then run robolearn from the checkout itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY_VERSION=${PY_VERSION:-3.12}
LIMIT_MB=${LIMIT_MB:-64}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
  manylinux_2_34_x86_64 manylinux_2_35_x86_64 any; do platforms+=(--platform "$p"); done
dl() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY_VERSION" \
    --implementation cp "${platforms[@]}" -d "$stage/wheels" "$@"
}
dl mujoco mujoco-warp warp-lang newton rsl-rl-lib tensordict pyvers gymnasium farama-notifications \
  gitpython gitdb smmap glfw pyopengl
# mujoco pins its compiled halves exactly
pins=$(unzip -p "$stage"/wheels/mujoco-[0-9]*.whl '*/METADATA' |
  sed -n 's/^Requires-Dist: \(mujoco-[a-z]*==[^ ;]*\)$/\1/p')
dl $pins
ls "$stage/wheels"
python3 -m pip install -q --no-deps --no-index --no-compile --target "$stage/site" \
  --python-version "$PY_VERSION" --implementation cp "${platforms[@]}" --only-binary=:all: \
  "$stage"/wheels/*.whl
tar -C "$stage/site" --exclude=./warp/tests --exclude=./warp/examples -cf - . |
  xz -T0 -6 > "$stage/site.tar.xz"
# what travels with every transfer: the tracked files and the untracked ones git keeps
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- | tail -1 | cut -f1)
part=$(( LIMIT_MB * 1024 * 1024 - tree - 4 * 1024 * 1024 ))  # 4 MiB to spare
[ "$part" -gt $(( 8 * 1024 * 1024 )) ] || { echo "the checkout alone nearly fills a transfer"; exit 1; }
rm -rf .gpu-deps[0-9]*
grep -qxF '/.gpu-deps*/' .git/info/exclude 2>/dev/null || echo '/.gpu-deps*/' >> .git/info/exclude
split -b "$part" -d -a 1 "$stage/site.tar.xz" "$stage/site.part"
i=1
for f in "$stage"/site.part*; do
  mkdir -p ".gpu-deps$i"
  mv "$f" ".gpu-deps$i/"
  i=$((i + 1))
done
( cd "$stage" && sha256sum site.tar.xz | cut -d' ' -f1 ) > ".gpu-deps$((i - 1))/site.sha256"
du -sh .gpu-deps[0-9]*
echo "send one .gpu-deps folder per transfer, in order; the last holds site.sha256"
