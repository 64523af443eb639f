package component

import (
	"strings"
	"testing"
)

func TestNoServedFunctionSaysHowToServeOne(t *testing.T) {
	handler = nil
	_, failure := run(&Request{})
	if failure == nil || !strings.Contains(failure.Message, "call Serve") {
		t.Errorf("got %+v", failure)
	}
}

func TestServedHandlerRunsEachCall(t *testing.T) {
	Serve(func(req *Request) (*Response, *Error) { return &Response{Tag: req.Meta.Tag}, nil })
	defer Serve(nil)
	rsp, failure := run(&Request{Meta: RequestMeta{Tag: "t1"}})
	if failure != nil || rsp.Tag != "t1" {
		t.Errorf("got %+v, %+v", rsp, failure)
	}
}
