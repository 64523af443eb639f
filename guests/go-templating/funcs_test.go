package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/plait-dev/plait/guests/sdk-go/component"

	v1 "github.com/plait-dev/plait/guests/go-templating/internal/k8sv1"
	common "github.com/plait-dev/plait/guests/go-templating/internal/xpcommon"
)

func TestFromYaml(t *testing.T) {
	cases := map[string]struct {
		text    string
		want    any
		wantErr bool
	}{
		"UnmarshalsNestedYAML": {
			text: "\ncomplexDictionary:\n  scalar1: true\n  list:\n  - abc\n  - def",
			want: map[string]any{"complexDictionary": map[string]any{"scalar1": true, "list": []any{"abc", "def"}}},
		},
		"TabIndentIsAnError": {
			text:    "\ncomplexDictionary:\n\t  scalar1: true\n",
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := fromYaml(tc.text)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestToYamlIndentsFourSpaces(t *testing.T) {
	got, err := toYaml(map[string]any{"complexDictionary": map[string]any{"scalar1": true, "list": []any{"abc", "def"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "complexDictionary:\n    list:\n        - abc\n        - def\n    scalar1: true\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestGetResourceCondition(t *testing.T) {
	ready := []any{map[string]any{"type": "Ready", "status": "True"}}
	cases := map[string]struct {
		res  map[string]any
		want common.Condition
	}{
		"FromObservedEntry": {
			res:  map[string]any{"resource": map[string]any{"status": map[string]any{"conditions": ready}}},
			want: common.Condition{Type: "Ready", Status: v1.ConditionTrue},
		},
		"FromObjectItself": {
			res:  map[string]any{"status": map[string]any{"conditions": ready}},
			want: common.Condition{Type: "Ready", Status: v1.ConditionTrue},
		},
		"NoStatusIsUnknown": {
			res:  map[string]any{"resource": map[string]any{}},
			want: common.Condition{Type: "Ready", Status: v1.ConditionUnknown},
		},
		"OtherConditionIsUnknown": {
			res:  map[string]any{"resource": map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "NotReady", "status": "True"}}}}},
			want: common.Condition{Type: "Ready", Status: v1.ConditionUnknown},
		},
		"AllFieldsDecode": {
			res: map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
				"type": "Ready", "status": "False", "reason": "Creating", "message": "wait",
				"lastTransitionTime": "2024-01-02T03:04:05Z", "observedGeneration": int64(3),
			}}}},
			want: common.Condition{Type: "Ready", Status: v1.ConditionFalse, Reason: "Creating", Message: "wait",
				LastTransitionTime: v1.Time{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).Local()}, ObservedGeneration: 3},
		},
		"BadTimeIsUnknown": {
			res:  map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"}}}},
			want: common.Condition{Type: "Ready", Status: v1.ConditionUnknown},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := getResourceCondition("Ready", tc.res)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestSetResourceNameAnnotation(t *testing.T) {
	if got, want := setResourceNameAnnotation("test"), "gotemplating.fn.crossplane.io/composition-resource-name: test"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInclude(t *testing.T) {
	const define = "{{- define \"test-template\" -}}\nvalue: {{.}}\n{{- end }}\n"
	cases := map[string]struct {
		tmpl    string
		want    string
		wantErr string
	}{
		"CapturesOutput": {
			tmpl: define + "{{- $var:= include \"test-template\" \"val\" -}}\nMust capture output: {{$var}}",
			want: "Must capture output: value: val",
		},
		"MissingDataIsAnError": {
			tmpl:    define + "{{- $var:= include \"test-template\" -}}\n",
			wantErr: "wrong number of args for include: want 2 got 1",
		},
		"MissingNameIsAnError": {
			tmpl:    define + "{{- $var:= include -}}\n",
			wantErr: "wrong number of args for include: want 2 got 0",
		},
		"SelfInclusionStopsAtTheLimit": {
			tmpl:    "{{- define \"r\" -}}{{ include \"r\" . }}{{- end -}}{{ include \"r\" . }}",
			wantErr: "rendering template has a nested reference name: r: unable to execute template",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := template.New("")
			tpl.Funcs(template.FuncMap{"include": includeFunc(tpl)})
			var out bytes.Buffer
			err := template.Must(tpl.Parse(tc.tmpl)).Execute(&out, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

var flexServer = map[string]any{
	"apiVersion": "dbforpostgresql.azure.upbound.io/v1beta1",
	"kind":       "FlexibleServer",
	"spec":       map[string]any{"forProvider": map[string]any{"storageMb": "32768"}},
	"status":     map[string]any{"atProvider": map[string]any{"id": "abcdef"}},
}

func TestGetComposedResource(t *testing.T) {
	observed := func(name string) map[string]any {
		return map[string]any{"observed": map[string]any{"resources": map[string]any{name: map[string]any{"resource": flexServer}}}}
	}
	cases := map[string]struct {
		req  map[string]any
		name string
		want map[string]any
	}{
		"FindsResource":            {req: observed("flexserver"), name: "flexserver", want: flexServer},
		"FindsNameWithDots":        {req: observed("flex.server"), name: "flex.server", want: flexServer},
		"MissingResourceIsNil":     {req: map[string]any{"observed": map[string]any{"resources": map[string]any{}}}, name: "missingResource"},
		"NumericNameIsAnIndex":     {req: observed("0"), name: "0"},
		"NameWithBracketIsInvalid": {req: observed("a[b"), name: "a[b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := getComposedResource(tc.req, tc.name); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestGetCompositeResource(t *testing.T) {
	xr := map[string]any{"apiVersion": "example.crossplane.io/v1beta1", "kind": "XR", "metadata": map[string]any{"name": "example"}, "spec": map[string]any{"key": "value"}}
	cases := map[string]struct {
		req  map[string]any
		want map[string]any
	}{
		"FindsComposite":        {req: map[string]any{"observed": map[string]any{"composite": map[string]any{"resource": xr}}}, want: xr},
		"MissingCompositeIsNil": {req: map[string]any{"observed": map[string]any{"composite": map[string]any{}}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := getCompositeResource(tc.req); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestGetExtraResources(t *testing.T) {
	items := func(field string, list []any) map[string]any {
		return map[string]any{field: map[string]any{"flexserver": map[string]any{"items": list}}}
	}
	cases := map[string]struct {
		req  map[string]any
		want []any
	}{
		"FromRequiredResources": {req: items("requiredResources", []any{flexServer}), want: []any{flexServer}},
		"FromExtraResources":    {req: items("extraResources", []any{flexServer}), want: []any{flexServer}},
		"EmptyItemsAreEmpty":    {req: items("requiredResources", []any{}), want: []any{}},
		"NoneAreNil":            {req: map[string]any{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := getExtraResources(tc.req, "flexserver"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestGetExtraResourcesFromContext(t *testing.T) {
	inContext := func(list []any) map[string]any {
		return map[string]any{"context": map[string]any{"apiextensions.crossplane.io/extra-resources": map[string]any{"flexserver": map[string]any{"items": list}}}}
	}
	cases := map[string]struct {
		req  map[string]any
		want []any
	}{
		"FindsItems":         {req: inContext([]any{flexServer}), want: []any{flexServer}},
		"EmptyItemsAreEmpty": {req: inContext([]any{}), want: []any{}},
		"NoneAreNil":         {req: map[string]any{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := getExtraResourcesFromContext(tc.req, "flexserver"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestGetCredentialData(t *testing.T) {
	cases := map[string]struct {
		creds []component.Credentials
		name  string
		want  map[string][]byte
	}{
		"FindsCredentialData": {
			creds: []component.Credentials{{Name: "foo-creds", Data: []component.ConnectionDetail{{Key: "password", Value: []byte("secret")}}}},
			name:  "foo-creds",
			want:  map[string][]byte{"password": []byte("secret")},
		},
		"MissingCredentialsAreNil": {name: "foo-creds"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := requestData(&component.Request{Credentials: tc.creds})
			if err != nil {
				t.Fatal(err)
			}
			if got := getCredentialData(data, tc.name); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestGetCredentialDataOfNonRequestIsNil(t *testing.T) {
	notARequest := map[string]any{"composite": map[string]any{}, "credentials": map[string]any{"x": map[string]any{"credentialData": map[string]any{"data": map[string]any{"k": "dmFs"}}}}}
	if got := getCredentialData(notARequest, "x"); got != nil {
		t.Errorf("got %#v, want nil", got)
	}
}

// The functions as templates call them: through the whole function.
func TestTemplateFunctions(t *testing.T) {
	req := func(tmpl string, opts map[string]any) *component.Request {
		r := withXR(inline(tmpl, opts))
		r.Observed.Resources = []component.ComposedResource{{Name: "db", Resource: component.Resource{
			JSON: `{"apiVersion":"v1","kind":"DB","status":{"conditions":[{"type":"Ready","status":"True","reason":"Available"}]}}`,
		}}}
		r.Credentials = []component.Credentials{{Name: "creds", Data: []component.ConnectionDetail{{Key: "password", Value: []byte("s3cr3t")}}}}
		r.RequiredResources = []component.RequiredResources{{Name: "cfg", Items: []string{`{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}`}}}
		return r
	}
	cases := map[string]struct {
		tmpl string
		opts map[string]any
		want map[string]any
	}{
		"ConditionOfObservedResource": {
			tmpl: configMap(`status: "{{ (getResourceCondition "Ready" (index .observed.resources "db")).Status }}"`,
				`reason: {{ (getResourceCondition "Ready" (getComposedResource . "db")).Reason }}`),
			want: map[string]any{"status": "True", "reason": "Available"},
		},
		"CompositeAndCredentials": {
			tmpl: configMap(`name: {{ (getCompositeResource .).metadata.name }}`,
				`password: {{ (getCredentialData . "creds").password | toString }}`),
			want: map[string]any{"name": "cool-xr", "password": "s3cr3t"},
		},
		"RequiredResources": {
			tmpl: configMap(`k: {{ (index (getExtraResources . "cfg") 0).resource.data.k }}`),
			want: map[string]any{"k": "v"},
		},
		"RandomChoiceOfOne": {
			tmpl: configMap(`pick: {{ randomChoice "only" }}`),
			want: map[string]any{"pick": "only"},
		},
		"SprigFunctions": {
			tmpl: configMap(`up: {{ "hello" | upper | b64enc }}`, `joined: {{ list 1 2 3 | join "," | quote }}`),
			want: map[string]any{"up": "SEVMTE8=", "joined": "1,2,3"},
		},
		"CustomDelimiters": {
			tmpl: configMap(`name: "[[ .observed.composite.resource.metadata.name ]]"`, `literal: "{{ not a template }}"`),
			opts: map[string]any{"delims": map[string]any{"left": "[[", "right": "]]"}},
			want: map[string]any{"name": "cool-xr", "literal": "{{ not a template }}"},
		},
		"OneDelimiterKeepsTheDefaults": {
			tmpl: configMap(`name: "{{ .observed.composite.resource.metadata.name }}"`),
			opts: map[string]any{"delims": map[string]any{"left": "[["}},
			want: map[string]any{"name": "cool-xr"},
		},
		"IncludeRendersNamedTemplate": {
			tmpl: "{{ define \"v\" }}from-{{ . }}{{ end }}" + configMap(`v: {{ include "v" "include" }}`),
			want: map[string]any{"v": "from-include"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := dataOf(t, renderOne(t, req(tc.tmpl, tc.opts))); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestTemplateFunctionErrors(t *testing.T) {
	cases := map[string]struct {
		tmpl string
		want string
	}{
		"EnvIsRemoved": {
			tmpl: `a: {{ env "HOME" }}`,
			want: `invalid function input: cannot parse the provided templates: template: manifests:1: function "env" not defined`,
		},
		"ExpandEnvIsRemoved": {
			tmpl: `a: {{ expandenv "$HOME" }}`,
			want: `invalid function input: cannot parse the provided templates: template: manifests:1: function "expandenv" not defined`,
		},
		"RandomChoiceOfNothing": {
			tmpl: `a: {{ randomChoice }}`,
			want: `cannot execute template: template: manifests:1:6: executing "manifests" at <randomChoice>: error calling randomChoice: invalid argument to Intn`,
		},
		"FailNamesPosition": {
			tmpl: "a: b\nc: {{ fail \"boom\" }}",
			want: `cannot execute template: template: manifests:2:6: executing "manifests" at <fail "boom">: error calling fail: boom`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sameResponse(t, run(t, withXR(inline(tc.tmpl, nil))), fatalResponse(xrState(), "{}", tc.want))
		})
	}
}
