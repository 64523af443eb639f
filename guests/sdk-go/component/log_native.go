//go:build !wasip1

package component

import (
	"fmt"
	"os"
)

// Outside the sandbox (go test, go run), log lines go to stderr.
func Log(level LogLevel, message string) {
	fmt.Fprintf(os.Stderr, "%d %s\n", level, message)
}
