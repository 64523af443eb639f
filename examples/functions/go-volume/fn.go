package main

import (
	"context"
	"fmt"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Function composes a PersistentVolumeClaim for a Volume, the way a gRPC
// function built on function-sdk-go does: this file would build unchanged
// into a gRPC server; main.go is what makes it a plait component.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// The ConfigMap in the Volume's namespace that holds the storage class to
// use, asked for as the required resource "defaults".
const defaultsName = "storage-defaults"

// RunFunction composes the claim, patching its size from the Volume,
// reports the claim's phase on the Volume, and sets a VolumeBound condition.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)

	xr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composite resource"))
		return rsp, nil
	}
	name := xr.Resource.GetName()
	namespace := xr.Resource.GetNamespace()
	log := f.log.WithValues("xr", name, "namespace", namespace)

	// Ask for the defaults on every call: plait (like Crossplane) calls the
	// step again with them until the requirements stop changing.
	rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
		"defaults": {
			ApiVersion: "v1",
			Kind:       "ConfigMap",
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: defaultsName},
			Namespace:  &namespace,
		},
	}}
	required, err := request.GetRequiredResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the required resources"))
		return rsp, nil
	}
	class := "standard"
	if defaults := required["defaults"]; len(defaults) > 0 {
		if c, ok, _ := unstructured.NestedString(defaults[0].Resource.Object, "data", "storageClassName"); ok && c != "" {
			class = c
		}
	} else {
		response.Warning(rsp, errors.Errorf("ConfigMap %s/%s not found: using storage class %q", namespace, defaultsName, class)).
			TargetCompositeAndClaim()
	}

	size, err := xr.Resource.GetString("spec.size")
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "the Volume needs spec.size"))
		return rsp, nil
	}

	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composed resources"))
		return rsp, nil
	}
	pvc := composed.New()
	pvc.SetAPIVersion("v1")
	pvc.SetKind("PersistentVolumeClaim")
	pvc.SetName(name)
	pvc.SetNamespace(namespace)
	for path, value := range map[string]any{
		"spec.accessModes":                []any{"ReadWriteOnce"},
		"spec.storageClassName":           class,
		"spec.resources.requests.storage": size,
	} {
		if err := pvc.SetValue(path, value); err != nil {
			response.Fatal(rsp, errors.Wrapf(err, "cannot set %s", path))
			return rsp, nil
		}
	}
	claim := &resource.DesiredComposed{Resource: pvc, Ready: resource.ReadyFalse}

	// Patch the observed phase back onto the Volume, and say whether it is bound.
	phase := "Pending"
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composed resources"))
		return rsp, nil
	}
	if o, ok := observed["claim"]; ok {
		if p, err := o.Resource.GetString("status.phase"); err == nil {
			phase = p
		}
	}
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composite resource"))
		return rsp, nil
	}
	if err := dxr.Resource.SetValue("status.phase", phase); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set status.phase"))
		return rsp, nil
	}
	if phase == "Bound" {
		claim.Ready = resource.ReadyTrue
		response.ConditionTrue(rsp, "VolumeBound", "Bound").TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, "VolumeBound", "WaitingForClaim").
			WithMessage(fmt.Sprintf("PersistentVolumeClaim %s is %s", name, phase)).
			TargetCompositeAndClaim()
	}

	desired["claim"] = claim
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
		return rsp, nil
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composite resource"))
		return rsp, nil
	}
	response.Normalf(rsp, "Requested %s of %s storage", size, class).TargetCompositeAndClaim()
	log.Info("Composed a PersistentVolumeClaim", "size", size, "class", class, "phase", phase)
	return rsp, nil
}
