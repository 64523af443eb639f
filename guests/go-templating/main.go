// Command go-templating is a plait function that composes resources from Go
// templates: a reimplementation of Crossplane's function-go-templating
// v0.12.2 that takes the same input and gives the same output, built on
// plait's component contract instead of function-sdk-go and gRPC so that
// it starts fast.
package main

import (
	"runtime/debug"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// Every call runs in a fresh instance that ends with it, so collecting
// garbage along the way only costs time: the collector runs only when the
// heap nears this limit, well inside the memory plait gives a call.
const heapLimit = 96 << 20

func init() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(heapLimit)
	component.Serve(runFunction)
}

func main() {}
