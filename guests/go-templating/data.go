package main

// The data a template renders: the RunFunctionRequest as upstream sees it,
// the protojson form of the request decoded into map[string]any. Field
// names are protojson's (lowerCamel), empty fields are left out, readiness
// is READY_TRUE or READY_FALSE, bytes are base64, and numbers are int64 or
// float64 as values.go explains.

import (
	"encoding/base64"
	"fmt"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

var capabilityNames = map[component.Capability]string{
	component.CapabilityCapabilities:      "CAPABILITY_CAPABILITIES",
	component.CapabilityRequiredResources: "CAPABILITY_REQUIRED_RESOURCES",
	component.CapabilityCredentials:       "CAPABILITY_CREDENTIALS",
	component.CapabilityConditions:        "CAPABILITY_CONDITIONS",
	component.CapabilityRequiredSchemas:   "CAPABILITY_REQUIRED_SCHEMAS",
}

func base64Map(details []component.ConnectionDetail) map[string]any {
	out := make(map[string]any, len(details))
	for _, d := range details {
		out[d.Key] = base64.StdEncoding.EncodeToString(d.Value)
	}
	return out
}

func resourceData(r *component.Resource) (map[string]any, error) {
	obj, err := parseObject(r.JSON)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"resource": obj}
	if len(r.ConnectionDetails) > 0 {
		out["connectionDetails"] = base64Map(r.ConnectionDetails)
	}
	switch r.Ready {
	case component.ReadyTrue:
		out["ready"] = "READY_TRUE"
	case component.ReadyFalse:
		out["ready"] = "READY_FALSE"
	}
	return out, nil
}

func stateData(s *component.State) (map[string]any, error) {
	out := map[string]any{}
	if s.Composite != nil {
		xr, err := resourceData(s.Composite)
		if err != nil {
			return nil, fmt.Errorf("composite: %w", err)
		}
		out["composite"] = xr
	}
	if len(s.Resources) > 0 {
		resources := make(map[string]any, len(s.Resources))
		for i := range s.Resources {
			r, err := resourceData(&s.Resources[i].Resource)
			if err != nil {
				return nil, fmt.Errorf("resource %q: %w", s.Resources[i].Name, err)
			}
			resources[s.Resources[i].Name] = r
		}
		out["resources"] = resources
	}
	return out, nil
}

// requestData builds the template data for req.
func requestData(req *component.Request) (map[string]any, error) {
	meta := map[string]any{}
	if req.Meta.Tag != "" {
		meta["tag"] = req.Meta.Tag
	}
	if len(req.Meta.Capabilities) > 0 {
		caps := make([]any, 0, len(req.Meta.Capabilities))
		for _, c := range req.Meta.Capabilities {
			if name, ok := capabilityNames[c]; ok {
				caps = append(caps, name)
			}
		}
		meta["capabilities"] = caps
	}
	observed, err := stateData(&req.Observed)
	if err != nil {
		return nil, fmt.Errorf("observed state: %w", err)
	}
	desired, err := stateData(&req.Desired)
	if err != nil {
		return nil, fmt.Errorf("desired state: %w", err)
	}
	ctx, err := parseObject(req.Context)
	if err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	data := map[string]any{"meta": meta, "observed": observed, "desired": desired, "context": ctx}
	if req.Input != nil {
		input, err := parseObject(*req.Input)
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		data["input"] = input
	}
	if len(req.RequiredResources) > 0 {
		// Both the current field and the deprecated one, as Crossplane
		// sends them (upstream also copies the one to the other).
		required, err := requiredData(req.RequiredResources)
		if err != nil {
			return nil, err
		}
		data["requiredResources"] = required
		data["extraResources"] = deepCopy(required)
	}
	if len(req.Credentials) > 0 {
		creds := make(map[string]any, len(req.Credentials))
		for _, c := range req.Credentials {
			cd := map[string]any{}
			if len(c.Data) > 0 {
				cd["data"] = base64Map(c.Data)
			}
			creds[c.Name] = map[string]any{"credentialData": cd}
		}
		data["credentials"] = creds
	}
	if len(req.RequiredSchemas) > 0 {
		schemas := make(map[string]any, len(req.RequiredSchemas))
		for _, s := range req.RequiredSchemas {
			schema := map[string]any{}
			if s.OpenAPIV3 != nil {
				v, err := parseObject(*s.OpenAPIV3)
				if err != nil {
					return nil, fmt.Errorf("required schema %q: %w", s.Name, err)
				}
				schema["openapiV3"] = v
			}
			schemas[s.Name] = schema
		}
		data["requiredSchemas"] = schemas
	}
	return data, nil
}

func requiredData(rrs []component.RequiredResources) (map[string]any, error) {
	out := make(map[string]any, len(rrs))
	for _, rr := range rrs {
		entry := map[string]any{}
		if len(rr.Items) > 0 {
			items := make([]any, 0, len(rr.Items))
			for i, item := range rr.Items {
				obj, err := parseObject(item)
				if err != nil {
					return nil, fmt.Errorf("required resources %q, item %d: %w", rr.Name, i, err)
				}
				items = append(items, map[string]any{"resource": obj})
			}
			entry["items"] = items
		}
		out[rr.Name] = entry
	}
	return out, nil
}
