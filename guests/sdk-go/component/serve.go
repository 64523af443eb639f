// Package component is the plait:function@1.0.0 contract for Go, without
// anything else: the contract's records as Go values (JSON kept as text),
// the canonical ABI glue a GOOS=wasip1 c-shared reactor exports, and the
// host's log import. It links no protobuf, gRPC or Kubernetes packages, so
// a function written against it stays small and starts fast; package
// plait builds function-sdk-go's API on top of it.
package component

// Handler runs one call of the function.
type Handler func(req *Request) (*Response, *Error)

var handler Handler

// Serve makes h the function this component runs. Call it from an init
// function of package main: the host instantiates the component (running
// every init) and then calls it. Package main's init runs last, so Serve
// also sets how the collector runs in the calls that follow.
func Serve(h Handler) {
	handler = h
	collectOnlyWhenShort()
}

func run(req *Request) (*Response, *Error) {
	if handler == nil {
		return nil, &Error{Kind: ErrorInternal, Message: "no function to run: call Serve from an init function in package main"}
	}
	return handler(req)
}
