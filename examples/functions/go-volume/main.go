// The plait entry point: where a gRPC function's main.go starts a server,
// this hands the Function to plait's SDK.
package main

import "github.com/plait-dev/plait/guests/sdk-go/plait"

func init() {
	plait.Serve(&Function{log: plait.NewLogger()})
}

func main() {}
