# Sourced by scripts/*: make sure .venv exists and holds what pyproject.toml pins.
# A stamp of pyproject.toml's hash saves reinstalling on every call.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
stamp="$venv/.clawlane-installed"
want="$(python3 -c 'import hashlib,sys;print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$root/pyproject.toml")"
if [ ! -x "$venv/bin/python" ]; then
  echo "clawlane: creating $venv" >&2
  python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "clawlane: installing dependencies into $venv" >&2
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q -e "$root[dev,otel,memory]" >&2
  echo "$want" > "$stamp"
fi
