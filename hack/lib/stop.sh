# Sourced by the scripts under hack/. Needs `wait`, so the caller must be
# the process's parent.

# stop_pid WHO SECONDS PID: SIGTERM to PID, then SIGKILL after SECONDS (a
# line to stderr, prefixed WHO, says so); returns PID's exit status.
stop_pid() {
  local who=$1 secs=$2 pid=$3 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < secs * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$who: process $pid did not stop within $secs s of SIGTERM; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  local rc=0
  wait "$pid" 2>/dev/null || rc=$?
  return "$rc"
}
