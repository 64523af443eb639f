//go:build !wasip1

package component

// collectOnlyWhenShort leaves a native process's collector as it is: it
// serves many calls.
func collectOnlyWhenShort() {}
