package main

import (
	"io/fs"
	"syscall"
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// Templates from a directory: every file, in lexical walk order, skipping
// hidden files and directories whose name starts with a dot.
func TestFileSystemSource(t *testing.T) {
	xr := `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"demo"},"spec":{"replicas":3}}`
	req := &component.Request{
		Input:    input(map[string]any{"source": "FileSystem", "fileSystem": map[string]any{"dirPath": "testdata/templates"}}),
		Observed: component.State{Composite: resource(xr)},
	}
	want := response(component.State{
		Composite: resource("{}"),
		Resources: []component.ComposedResource{
			{Name: "config", Resource: *resource(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"demo-config"},"data":{"owner":"demo"}}`)},
			{Name: "secret", Resource: *resource(`{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{},"name":"demo-secret"},"stringData":{"replicas":"3"}}`)},
		},
	}, "{}")
	sameResponse(t, run(t, req), want)
}

func TestReadTemplateDirConcatenatesInWalkOrder(t *testing.T) {
	got, err := readTemplateDir(grantedFS{}, "testdata/templates")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := readTemplateDir(grantedFS{}, "testdata/templates/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	secret, err := readTemplateDir(grantedFS{}, "testdata/templates/nested")
	if err != nil {
		t.Fatal(err)
	}
	if want := cm + secret; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFileSystemSourceErrors(t *testing.T) {
	cases := map[string]struct {
		dir  string
		want string
	}{
		"MissingDirectory": {
			dir:  "testdata/wrong",
			want: "invalid function input: cannot read tmpl from the folder {testdata/wrong}: open testdata/wrong: no such file or directory",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &component.Request{Input: input(map[string]any{"source": "FileSystem", "fileSystem": map[string]any{"dirPath": tc.dir}})}
			sameResponse(t, run(t, req), fatalResponse(component.State{}, "{}", tc.want))
		})
	}
}

func TestHiddenDirectoryRendersNothing(t *testing.T) {
	got, err := readTemplateDir(grantedFS{}, "testdata/templates/..skipped")
	if err != nil || got != "" {
		t.Errorf("got %q, %v; want nothing", got, err)
	}
}

// sandboxFS opens nothing, as a WASI sandbox without preopened
// directories answers: EBADF.
type sandboxFS struct{}

func (sandboxFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EBADF}
}

// In plait's sandbox a FileSystem source fails saying why no directory
// can be read, not with the errno WASI gives.
func TestFileSystemSourceWithoutAFilesystem(t *testing.T) {
	templateFS = sandboxFS{}
	t.Cleanup(func() { templateFS = grantedFS{} })
	req := &component.Request{Input: input(map[string]any{"source": "FileSystem", "fileSystem": map[string]any{"dirPath": "/templates"}})}
	want := "invalid function input: cannot read tmpl from the folder {/templates}: open /templates: " +
		"no directory is granted to this function at that path: in plait render, " +
		"grant one with the Function's render.plait.dev/filesystem annotation (<dir>=<dirPath>); " +
		"the controller grants none, so give the templates inline (source: Inline) or in the environment (source: Environment)"
	sameResponse(t, run(t, req), fatalResponse(component.State{}, "{}", want))
}
