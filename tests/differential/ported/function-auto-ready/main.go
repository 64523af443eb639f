// Package main implements a Composition Function.
//
// This file replaces upstream function-auto-ready's main.go, which parses
// flags and starts the gRPC server: the rest of the module builds unchanged
// into a plait component (tests/differential/build-ported.sh).
package main

import (
	"github.com/crossplane/function-sdk-go/response"

	"github.com/plait-dev/plait/guests/sdk-go/plait"
)

func init() {
	plait.Serve(&Function{log: plait.NewLogger(), ttl: response.DefaultTTL})
}

func main() {}
