package main

import (
	"reflect"
	"testing"
)

func TestParsePath(t *testing.T) {
	f := fieldSegment
	cases := map[string]struct {
		want []segment
		ok   bool
	}{
		"observed.resources[flex.server]resource": {want: []segment{f("observed"), f("resources"), f("flex.server"), f("resource")}, ok: true},
		"requiredResources[name].items":           {want: []segment{f("requiredResources"), f("name"), f("items")}, ok: true},
		"a[0].b":                                  {want: []segment{f("a"), {index: 0, isIndex: true}, f("b")}, ok: true},
		"a['quoted']":                             {want: []segment{f("a"), f("quoted")}, ok: true},
		"a[4294967296]":                           {want: []segment{f("a"), f("4294967296")}, ok: true},
		"a[]":                                     {},
		"a[b[c]]":                                 {},
		"a]b":                                     {},
		"a[b":                                     {},
		".a":                                      {},
		"a.":                                      {},
		"a..b":                                    {},
		"a.[b]":                                   {},
	}
	for path, tc := range cases {
		t.Run(path, func(t *testing.T) {
			got, ok := parsePath(path)
			if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestGetValueInto(t *testing.T) {
	obj := map[string]any{"status": map[string]any{"n": int64(1), "f": 1.5}, "nothing": nil, "list": []any{"a"}}
	cases := map[string]struct {
		path     string
		want     any
		notFound bool
		err      bool
	}{
		"ObjectKeepsInt64":   {path: "status", want: map[string]any{"n": int64(1), "f": 1.5}},
		"MissingIsNotFound":  {path: "spec", notFound: true, err: true},
		"ThroughNilNotFound": {path: "nothing.x", notFound: true, err: true},
		"IndexIntoList":      {path: "list[0]", want: "a"},
		"IndexPastEnd":       {path: "list[1]", notFound: true, err: true},
		"IndexIntoObject":    {path: "status[0]", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got any
			err := getValueInto(obj, tc.path, &got)
			if (err != nil) != tc.err || isNotFound(err) != tc.notFound {
				t.Fatalf("error %v, want error %v, not found %v", err, tc.err, tc.notFound)
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
	if err := getValueInto(obj, "spec", &obj); err == nil || err.Error() != "spec: no such field" {
		t.Errorf("got %v, want upstream's wording", err)
	}
}
