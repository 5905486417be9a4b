#!/bin/bash
# Make the throwaway venv /work/venvs/msp-VERSION for one mindstudio-probe release (outside the repo).
# usage: bash tests/dumper_corpus/make_venv.sh VERSION   (VENVS=/elsewhere to change the root)
#
# Two shared bases hold torch 2.13.0 CPU and the releases' dependencies; each release venv has no pip
# and sees a base through a .pth file, with only the release wheel (--no-deps) installed in it.
#   base    : torch, numpy<2, pandas==2.0.3 and the deps of 1.0.1 - 8.3.3, plus the workarounds
#             service_identity and cryptography<44 (pyopenssl 24.2.1)
#   basenew : numpy 2 / pandas 3 over base, for 26.x
set -e
v=$1; R=${VENVS:-/work/venvs}
if [ ! -x $R/base/bin/python ]; then
  python3 -m venv $R/base
  $R/base/bin/pip install -q torch==2.13.0 "numpy<2" pandas==2.0.3 wheel einops pyyaml rich tqdm \
    "openpyxl>=3.0.6" "pyopenssl==24.2.1" "cryptography<44" twisted matplotlib tensorboard tabulate \
    pwinput psutil service_identity
fi
if [ ! -x $R/basenew/bin/python ]; then
  python3 -m venv --without-pip $R/basenew
  echo "$R/base/lib/python3.11/site-packages" > $R/basenew/lib/python3.11/site-packages/zz_base.pth
  $R/base/bin/pip --python $R/basenew/bin/python install -q --ignore-installed --no-deps numpy pandas
  $R/base/bin/pip --python $R/basenew/bin/python install -q packaging pytz psutil
fi
case $v in 26.*) parent=$R/basenew;; *) parent=$R/base;; esac
d=$R/msp-$v
rm -rf $d; python3 -m venv --without-pip $d
sp=$d/lib/python3.11/site-packages
echo "$parent/lib/python3.11/site-packages" > $sp/zz_parent.pth
[ $parent = $R/basenew ] && echo "$R/base/lib/python3.11/site-packages" > $sp/zzz_base.pth
$R/base/bin/pip --python $d/bin/python install -q --no-deps "mindstudio-probe==$v"
$d/bin/python -c "import msprobe, torch, numpy, pandas; print('$v ok', torch.__version__, numpy.__version__, pandas.__version__)"
