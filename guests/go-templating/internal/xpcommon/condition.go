// Package common holds Crossplane's condition types under the package name
// crossplane-runtime gives them, so templates and decoding errors name them
// as they do upstream ("common.Condition").
package common

import (
	v1 "github.com/plait-dev/plait/guests/go-templating/internal/k8sv1"
)

// ConditionType is the type of a condition, e.g. Ready.
type ConditionType string

// The condition types Crossplane owns.
const (
	TypeReady   ConditionType = "Ready"
	TypeSynced  ConditionType = "Synced"
	TypeHealthy ConditionType = "Healthy"
)

// ConditionReason is a machine-readable reason for a condition.
type ConditionReason string

// Condition is a status condition of a Crossplane resource.
type Condition struct {
	Type               ConditionType      `json:"type"`
	Status             v1.ConditionStatus `json:"status"`
	LastTransitionTime v1.Time            `json:"lastTransitionTime"`
	Reason             ConditionReason    `json:"reason"`
	Message            string             `json:"message,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
}

// Equal compares type, status, reason and message, and the observed
// generation when both conditions have one; never the transition time.
func (c Condition) Equal(other Condition) bool {
	same := c.Type == other.Type && c.Status == other.Status && c.Reason == other.Reason && c.Message == other.Message
	if c.ObservedGeneration == 0 || other.ObservedGeneration == 0 {
		return same
	}
	return same && c.ObservedGeneration == other.ObservedGeneration
}

// WithMessage returns a copy of c with the message set.
func (c Condition) WithMessage(msg string) Condition {
	c.Message = msg
	return c
}

// WithObservedGeneration returns a copy of c with the observed generation set.
func (c Condition) WithObservedGeneration(gen int64) Condition {
	c.ObservedGeneration = gen
	return c
}

// IsSystemConditionType reports whether Crossplane owns conditions of type t.
func IsSystemConditionType(t ConditionType) bool {
	return t == TypeReady || t == TypeSynced || t == TypeHealthy
}

// ConditionedStatus is the conditions part of a resource's status.
type ConditionedStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}

// GetCondition returns the condition of type ct, or one of that type with
// status Unknown.
func (s *ConditionedStatus) GetCondition(ct ConditionType) Condition {
	for _, c := range s.Conditions {
		if c.Type == ct {
			return c
		}
	}
	return Condition{Type: ct, Status: v1.ConditionUnknown}
}
