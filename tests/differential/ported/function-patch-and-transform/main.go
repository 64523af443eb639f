// Package main implements a Composition Function.
//
// This file replaces upstream function-patch-and-transform's main.go, which
// parses flags and starts the gRPC server: the rest of the module builds
// unchanged into a plait component (tests/differential/build-ported.sh).
package main

import "github.com/plait-dev/plait/guests/sdk-go/plait"

func init() {
	plait.Serve(&Function{log: plait.NewLogger()})
}

func main() {}
