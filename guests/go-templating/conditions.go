package main

// ClaimConditions documents: conditions for the composite resource and,
// when targeted so, its claim.

import (
	"fmt"

	"github.com/plait-dev/plait/guests/sdk-go/component"

	v1 "github.com/plait-dev/plait/guests/go-templating/internal/k8sv1"
	common "github.com/plait-dev/plait/guests/go-templating/internal/xpcommon"
)

// CompositionTarget is who a condition is for: Composite, or
// CompositeAndClaim. Anything else means Composite.
type CompositionTarget string

// The targets a condition may name.
const (
	CompositionTargetComposite         CompositionTarget = "Composite"
	CompositionTargetCompositeAndClaim CompositionTarget = "CompositeAndClaim"
)

// TargetedCondition is one entry of a ClaimConditions document.
type TargetedCondition struct {
	common.Condition `json:",inline"`

	Target CompositionTarget `json:"target"`
}

// claimConditions turns the entries into response conditions, stopping at
// the first whose type Crossplane reserves. The conditions before it are
// returned with the error, as upstream keeps them in its response.
func claimConditions(entries []TargetedCondition) ([]component.Condition, error) {
	out := make([]component.Condition, 0, len(entries))
	for _, c := range entries {
		if common.IsSystemConditionType(c.Type) {
			return out, fmt.Errorf("cannot set ClaimCondition type: %s is a reserved Crossplane Condition", c.Type)
		}
		out = append(out, toCondition(c))
	}
	return out, nil
}

func toCondition(c TargetedCondition) component.Condition {
	target := component.TargetComposite
	if c.Target == CompositionTargetCompositeAndClaim {
		target = component.TargetCompositeAndClaim
	}
	out := component.Condition{
		Type:   string(c.Type),
		Reason: string(c.Reason),
		Target: &target,
	}
	switch c.Status {
	case v1.ConditionTrue:
		out.Status = component.ConditionTrue
	case v1.ConditionFalse:
		out.Status = component.ConditionFalse
	default:
		out.Status = component.ConditionUnknown
	}
	if c.Message != "" {
		msg := c.Message
		out.Message = &msg
	}
	return out
}
