package report

import (
	"regexp"
	"strconv"
)

// rlimitNames are Linux's resource numbers, as runc's "error setting rlimit type N" gives
// them, with the compose ulimits key that sets each.
var rlimitNames = map[int]string{
	0: "cpu", 1: "fsize", 2: "data", 3: "stack", 4: "core", 5: "rss", 6: "nproc", 7: "nofile",
	8: "memlock", 9: "as", 10: "locks", 11: "sigpending", 12: "msgqueue", 13: "nice", 14: "rtprio", 15: "rttime",
}

var (
	rawRlimit    = regexp.MustCompile(`error setting rlimit type (\d+): operation not permitted`)
	rawShareable = regexp.MustCompile(`can't join IPC of container (\S+): non-shareable IPC`)
)

// plainWords says in plain words what a raw engine error means, for the line in front of
// it; "" for an error it does not know. Docker passes runc's errors through as they are:
// "error setting rlimit type 8" names neither the ulimit nor why.
func plainWords(raw string) string {
	if m := rawRlimit.FindStringSubmatch(raw); m != nil {
		n, _ := strconv.Atoi(m[1])
		name, ok := rlimitNames[n]
		if !ok {
			return ""
		}
		return "the engine refused the " + name + " ulimit (rlimit type " + m[1] + "): it is above the hard limit the Docker daemon itself runs with, or above what the kernel allows (fs.nr_open for nofile), and a container cannot raise it"
	}
	if m := rawShareable.FindStringSubmatch(raw); m != nil {
		return "the container whose ipc namespace the service joins (" + m[1] + ") does not share it: it needs ipc: shareable"
	}
	return ""
}
