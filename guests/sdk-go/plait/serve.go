// Package plait runs a Crossplane composition function written against
// github.com/crossplane/function-sdk-go as a plait component.
//
// A gRPC function's main.go starts a server; a plait function's main.go
// hands the same Function to Serve instead:
//
//	func init() {
//		plait.Serve(&Function{log: plait.NewLogger()})
//	}
//
//	func main() {}
//
// and builds with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared,
// then `plait function componentize` (or wasm-tools) makes the component.
package plait

import (
	"context"
	"fmt"
	"runtime/debug"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// Runner is what a function-sdk-go function implements:
// fnv1.FunctionRunnerServiceServer's RunFunction.
type Runner interface {
	RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error)
}

// Serve makes fn the function this component runs. Call it from an init
// function of package main: the host instantiates the component (running
// every init) and then calls it.
func Serve(fn Runner) {
	component.Serve(func(req *Request) (*Response, *Error) { return Handle(fn, req) })
}

// Handle runs fn on a plait request, converting to and from the gRPC
// protocol's messages. An error RunFunction returns, and a panic, become
// an internal error the host reports on the step; a request the protocol
// cannot carry is invalid input.
func Handle(fn Runner, req *Request) (rsp *Response, failure *Error) {
	defer func() {
		if r := recover(); r != nil {
			rsp = nil
			failure = &Error{Kind: ErrorInternal, Message: fmt.Sprintf("function panicked: %v\n%s", r, debug.Stack())}
		}
	}()
	in, err := ToRunFunctionRequest(req)
	if err != nil {
		return nil, &Error{Kind: ErrorInvalidInput, Message: err.Error()}
	}
	out, err := fn.RunFunction(context.Background(), in)
	if err != nil {
		return nil, &Error{Kind: ErrorInternal, Message: err.Error()}
	}
	if out == nil {
		return nil, &Error{Kind: ErrorInternal, Message: "RunFunction returned neither a response nor an error"}
	}
	rsp, err = FromRunFunctionResponse(req, out)
	if err != nil {
		return nil, &Error{Kind: ErrorInternal, Message: fmt.Sprintf("cannot convert the response: %v", err)}
	}
	return rsp, nil
}
