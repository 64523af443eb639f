// Command go-templating is a plait function that composes resources from Go
// templates: a reimplementation of Crossplane's function-go-templating
// v0.12.2 that takes the same input and gives the same output, built on
// plait's component contract instead of function-sdk-go and gRPC so that
// it starts fast.
package main

import "github.com/plait-dev/plait/guests/sdk-go/component"

// Every call runs in a fresh instance that ends with it; component.Serve
// sets the collector to run only when memory runs short.
func init() {
	component.Serve(runFunction)
}

func main() {}
