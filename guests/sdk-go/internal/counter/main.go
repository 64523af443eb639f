// Command counter is a test function: it counts its inits and calls in
// globals and says what it counted (and prints "called" to stdout), so a test can tell whether a call
// starts from a clean instance. Its input picks how the call ends: "trap"
// panics, "spin" never returns, anything else answers.
package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

var (
	inits int
	calls int
	// startedAt is read from the clock while the component initialises:
	// in a snapshot, from the snapshotter's clock, which starts in 1970.
	startedAt time.Time
)

func init() {
	inits++
	startedAt = time.Now()
	component.Serve(run)
}

func run(req *component.Request) (*component.Response, *component.Error) {
	calls++
	input := ""
	if req.Input != nil {
		input = *req.Input
	}
	switch {
	case strings.Contains(input, "trap"):
		panic("asked to trap")
	case strings.Contains(input, "spin"):
		for {
			calls++
		}
	}
	fmt.Println("called") // os.Stdout was opened in the snapshot
	message := fmt.Sprintf("inits=%d calls=%d from-snapshot=%t clock-forward=%t",
		inits, calls, startedAt.Unix() == 0, !time.Now().Before(startedAt))
	return &component.Response{
		Tag:     req.Meta.Tag,
		Context: req.Context,
		Results: []component.Result{{Severity: component.SeverityNormal, Message: message}},
	}, nil
}

func main() {}
