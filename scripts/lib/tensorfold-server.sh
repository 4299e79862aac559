# shellcheck shell=bash
# Starting `tensorfold serve` for the bench scripts. Sourced; it only
# defines a function. Messages are prefixed with the sourcing script's name.

# tensorfold_start BIN LOG MODEL ARGS...: starts BIN serve MODEL on a free
# loopback port (--port 0) with ARGS, logging to LOG, and waits for its
# "listening on" line, the only place the port is known. Sets the caller's
# globals `server_pid` (the caller stops the server) and `url`. A server
# that exits first, or no such line after 300 s, ends the script (exit 1)
# with the log's last lines.
tensorfold_start() {
  local bin="$1" log="$2" model="$3" me="${0##*/}" waited=0
  shift 3
  "$bin" serve "$model" --port 0 "$@" >"$log" 2>&1 &
  server_pid=$!
  until grep -qs "^listening on http://" "$log"; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "$me: the server did not start; its log, $log:" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
    ((waited++ < 3000)) || { echo "$me: no 'listening on' line in $log after 300 s" >&2; exit 1; }
    sleep 0.1
  done
  # shellcheck disable=SC2034  # the caller's global
  url="$(sed -n 's/^listening on \(http:\/\/[^ ]*\).*/\1/p' "$log" | head -n 1)"
}
