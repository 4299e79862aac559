# shellcheck shell=bash
# Starting and checking llama.cpp's llama-server for the bench scripts.
# Sourced by scripts/bench-gguf, bench-recall and bench-regenerate; it only
# defines functions. Messages are prefixed with the sourcing script's name.
#
# llama_start sets the caller's globals `server_pid` (the caller stops the
# server with its own stop function, as it does its tensorfold servers) and
# `url` (http://127.0.0.1:PORT, once the server answers /health).

# llama_check BIN: fails, saying why, unless BIN is an executable
# llama-server and the tools llama_start needs (python3, curl) are here.
llama_check() {
  local me="${0##*/}" tool
  [[ -x "$1" ]] || { echo "$me: $1 is missing or not executable (see --llama-bin)" >&2; return 1; }
  for tool in python3 curl; do
    command -v "$tool" >/dev/null || { echo "$me: $tool is needed to run llama-server" >&2; return 1; }
  done
}

# llama_free_port: a loopback port that was free a moment ago. llama-server
# takes no port 0, so the port is chosen here; the race with other programs
# is covered by llama_start's retries.
llama_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# llama_start BIN LOG FILE SLOTS THREADS CONTEXT [ARGS...]: starts BIN
# (llama-server) on the GGUF FILE with SLOTS parallel slots (-np), THREADS
# threads (-t) and a KV cache of CONTEXT tokens (-c, shared by the slots),
# plus ARGS, logging to LOG. It is ready once /health answers 200 (it says
# 503 while loading). A server that exits at once (a port taken meanwhile)
# is tried again on another port, three times in all; then, or after 300 s
# without health, the script exits 1.
llama_start() {
  local bin="$1" log="$2" file="$3" slots="$4" threads="$5" context="$6"
  shift 6
  local me="${0##*/}" try port code waited
  for try in 1 2 3; do
    port="$(llama_free_port)"
    "$bin" -m "$file" --host 127.0.0.1 --port "$port" -c "$context" -np "$slots" -t "$threads" "$@" \
      >"$log" 2>&1 &
    server_pid=$!
    waited=0
    while kill -0 "$server_pid" 2>/dev/null; do
      code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" 2>/dev/null || true)"
      if [[ "$code" == 200 ]]; then
        # shellcheck disable=SC2034  # the caller's global
        url="http://127.0.0.1:$port"
        return 0
      fi
      ((waited++ < 3000)) || { echo "$me: llama-server not healthy after 300 s; see $log" >&2; exit 1; }
      sleep 0.1
    done
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    echo "$me: llama-server exited on port $port (try $try); its log, $log:" >&2
    tail -n 5 "$log" >&2
  done
  exit 1
}
