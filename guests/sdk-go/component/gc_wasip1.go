//go:build wasip1

package component

import (
	"runtime"
	"runtime/debug"
)

// callHeadroom is how much a call may allocate before Go's collector runs.
// Every call has an instance of its own, dropped when it returns, so
// collecting garbage before memory runs short only costs time: a
// collection marks the whole heap the snapshot holds, tens of
// milliseconds for a function that links Kubernetes' packages.
const callHeadroom = 64 << 20

// collectOnlyWhenShort runs once every package's init is done: from then
// on the collector runs only once a call has allocated callHeadroom more
// than the memory init left in use.
func collectOnlyWhenShort() {
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(int64(stats.Sys-stats.HeapReleased) + callHeadroom)
}
