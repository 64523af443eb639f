package main

import (
	"reflect"
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"

	v1 "github.com/plait-dev/plait/guests/go-templating/internal/k8sv1"
	common "github.com/plait-dev/plait/guests/go-templating/internal/xpcommon"
)

func TestClaimConditions(t *testing.T) {
	cases := map[string]struct {
		entries []TargetedCondition
		want    []component.Condition
		wantErr string
	}{
		"NoConditions": {want: []component.Condition{}},
		"ReservedTypeIsAnError": {
			entries: []TargetedCondition{{Condition: common.Condition{Message: "Ready Message", Status: v1.ConditionTrue, Type: "Ready"}, Target: CompositionTargetComposite}},
			want:    []component.Condition{},
			wantErr: "cannot set ClaimCondition type: Ready is a reserved Crossplane Condition",
		},
		"ConditionsBeforeAReservedOneAreKept": {
			entries: []TargetedCondition{
				{Condition: common.Condition{Type: "A", Status: v1.ConditionTrue}},
				{Condition: common.Condition{Type: "Healthy", Status: v1.ConditionTrue}},
			},
			want:    []component.Condition{{Type: "A", Status: component.ConditionTrue, Target: ptr(component.TargetComposite)}},
			wantErr: "cannot set ClaimCondition type: Healthy is a reserved Crossplane Condition",
		},
		"AddsConditions": {
			entries: []TargetedCondition{
				{Condition: common.Condition{Message: "Creating Resource", Status: v1.ConditionFalse, Type: "NetworkReady"}, Target: CompositionTargetCompositeAndClaim},
				{Condition: common.Condition{Message: "Ready Message", Status: v1.ConditionTrue, Type: "DatabaseReady"}, Target: CompositionTargetComposite},
				{Condition: common.Condition{Message: "No Target should add CompositeAndClaim", Status: v1.ConditionTrue, Type: "NoTarget"}},
			},
			want: []component.Condition{
				{Message: ptr("Creating Resource"), Status: component.ConditionFalse, Target: ptr(component.TargetCompositeAndClaim), Type: "NetworkReady"},
				{Message: ptr("Ready Message"), Status: component.ConditionTrue, Target: ptr(component.TargetComposite), Type: "DatabaseReady"},
				{Message: ptr("No Target should add CompositeAndClaim"), Status: component.ConditionTrue, Target: ptr(component.TargetComposite), Type: "NoTarget"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := claimConditions(tc.entries)
			if (err != nil || tc.wantErr != "") && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %s, want %s", show(got), show(tc.want))
			}
		})
	}
}

func TestToCondition(t *testing.T) {
	cases := map[string]struct {
		in   TargetedCondition
		want component.Condition
	}{
		"Basic": {
			in:   TargetedCondition{Condition: common.Condition{Message: "Basic Message", Status: v1.ConditionTrue, Type: "TestType"}, Target: CompositionTargetComposite},
			want: component.Condition{Message: ptr("Basic Message"), Status: component.ConditionTrue, Target: ptr(component.TargetComposite), Type: "TestType"},
		},
		"DefaultsAreUnknownAndComposite": {
			want: component.Condition{Status: component.ConditionUnknown, Target: ptr(component.TargetComposite)},
		},
		"StatusFalseNoTarget": {
			in:   TargetedCondition{Condition: common.Condition{Message: "Basic Message", Status: v1.ConditionFalse, Type: "TestType"}},
			want: component.Condition{Message: ptr("Basic Message"), Status: component.ConditionFalse, Target: ptr(component.TargetComposite), Type: "TestType"},
		},
		"UnknownTargetIsComposite": {
			in:   TargetedCondition{Condition: common.Condition{Type: "T", Status: "weird", Reason: "R"}, Target: "COMPOSE"},
			want: component.Condition{Status: component.ConditionUnknown, Target: ptr(component.TargetComposite), Type: "T", Reason: "R"},
		},
		"CompositeAndClaim": {
			in:   TargetedCondition{Condition: common.Condition{Type: "T", Status: v1.ConditionTrue}, Target: "CompositeAndClaim"},
			want: component.Condition{Status: component.ConditionTrue, Target: ptr(component.TargetCompositeAndClaim), Type: "T"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := toCondition(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %s, want %s", show(got), show(tc.want))
			}
		})
	}
}

// ClaimConditions documents as the function reads them.
func TestClaimConditionsDocuments(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want *component.Response
	}{
		"ConditionsBeforeTheReservedOneStayInTheFatalResponse": {
			doc: metaDoc + `"kind":"ClaimConditions","conditions":[{"type":"A","status":"True","reason":"R"},{"type":"Synced","status":"True","reason":"R"}]}`,
			want: func() *component.Response {
				rsp := fatalResponse(xrState(), "{}", "cannot set ClaimCondition type: Synced is a reserved Crossplane Condition")
				rsp.Conditions = []component.Condition{{Type: "A", Status: component.ConditionTrue, Reason: "R", Target: ptr(component.TargetComposite)}}
				return rsp
			}(),
		},
		"MissingConditionsIsFatal": {
			doc:  metaDoc + `"kind":"ClaimConditions"}`,
			want: fatalResponse(xrState(), "{}", "cannot get Conditions from input: conditions: no such field"),
		},
		"BadTransitionTimeIsFatal": {
			doc:  metaDoc + `"kind":"ClaimConditions","conditions":[{"type":"A","status":"True","reason":"R","lastTransitionTime":"yesterday"}]}`,
			want: fatalResponse(xrState(), "{}", `cannot get Conditions from input: cannot unmarshal value from JSON: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`),
		},
		"WrongTypeIsFatal": {
			doc:  metaDoc + `"kind":"ClaimConditions","conditions":[{"type":1,"status":"True","reason":"R"}]}`,
			want: fatalResponse(xrState(), "{}", "cannot get Conditions from input: cannot unmarshal value from JSON: json: cannot unmarshal number into Go struct field TargetedCondition.Condition.type of type common.ConditionType"),
		},
		"WrongTargetTypeIsFatal": {
			doc:  metaDoc + `"kind":"ClaimConditions","conditions":[{"type":"A","status":"True","reason":"R","target":1}]}`,
			want: fatalResponse(xrState(), "{}", "cannot get Conditions from input: cannot unmarshal value from JSON: json: cannot unmarshal number into Go struct field TargetedCondition.target of type main.CompositionTarget"),
		},
		"FieldNamesAreCaseSensitive": {
			doc: metaDoc + `"kind":"ClaimConditions","conditions":[{"Type":"A","status":"True","reason":"R"}]}`,
			want: func() *component.Response {
				rsp := response(xrState(), "{}")
				rsp.Conditions = []component.Condition{{Status: component.ConditionTrue, Reason: "R", Target: ptr(component.TargetComposite)}}
				return rsp
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sameResponse(t, run(t, withXR(inline(tc.doc, nil))), tc.want)
		})
	}
}
