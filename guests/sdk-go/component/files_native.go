//go:build !wasip1

package component

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Open opens name for reading. Outside the sandbox (go test, go run) it
// is os.Open.
func Open(name string) (fs.File, error) {
	return os.Open(filepath.Clean(name))
}
