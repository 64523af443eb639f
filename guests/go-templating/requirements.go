package main

// ExtraResources documents: the resources the step needs, which the host
// fetches and passes in the next call's required resources.

import (
	"sort"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// ExtraResourcesRequirements are an ExtraResources document's
// requirements, by name.
type ExtraResourcesRequirements map[string]ExtraResourcesRequirement

// ExtraResourcesRequirement selects resources of one kind by name or by
// labels, in a namespace or cluster-wide.
type ExtraResourcesRequirement struct {
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	MatchName   string            `json:"matchName,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
}

// selector is the requirement as the host takes it. Without matchName it
// selects by labels, and (as upstream's conversion does) without a
// namespace.
func (e ExtraResourcesRequirement) selector() component.ResourceSelector {
	sel := component.ResourceSelector{APIVersion: e.APIVersion, Kind: e.Kind}
	if e.MatchName == "" {
		sel.MatchLabels = make([][2]string, 0, len(e.MatchLabels))
		for _, k := range sortedKeys(e.MatchLabels) {
			sel.MatchLabels = append(sel.MatchLabels, [2]string{k, e.MatchLabels[k]})
		}
		return sel
	}
	name := e.MatchName
	sel.MatchName = &name
	if e.Namespace != "" {
		ns := e.Namespace
		sel.Namespace = &ns
	}
	return sel
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
