// Package procstat reads this process's memory figures from Linux's
// /proc/self/status, for the benchmark commands that report resident set
// sizes. It imports nothing of askrepo.
package procstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// KB reads one "Name:  N kB" line of /proc/self/status, e.g. KB("VmRSS:")
// for the resident set or KB("VmHWM:") for its peak; 0 when absent (not
// Linux).
func KB(name string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
