package main

import (
	"context"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"
)

// Function composes a ConfigMap greeting the XR's spec.greeting (or
// "Hello") and passes earlier steps through. It is written against
// function-sdk-go, as a gRPC function is; main.go makes it a plait component.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// RunFunction runs the function.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	xr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composite resource"))
		return rsp, nil
	}
	greeting, err := xr.Resource.GetString("spec.greeting")
	if err != nil || greeting == "" {
		greeting = "Hello"
	}

	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composed resources"))
		return rsp, nil
	}
	cm := composed.New()
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	if err := cm.SetValue("data.greeting", greeting); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set data.greeting"))
		return rsp, nil
	}
	ready := resource.ReadyFalse
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composed resources"))
		return rsp, nil
	}
	if _, ok := observed["greeting"]; ok {
		ready = resource.ReadyTrue
	}
	desired["greeting"] = &resource.DesiredComposed{Resource: cm, Ready: ready}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
		return rsp, nil
	}
	response.Normalf(rsp, "composed greeting %s", greeting)
	f.log.Info("Composed a greeting", "greeting", greeting)
	return rsp, nil
}
