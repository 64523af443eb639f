package main

// Where the templates come from: the input itself (Inline), files under a
// directory (FileSystem), or a key of the environment in the context
// (Environment). plait grants a function a directory only when asked
// (render.plait.dev/filesystem in plait render; never in the controller),
// so a FileSystem source without one says how to grant it.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

const environmentKey = "apiextensions.crossplane.io/environment"

// templateText returns the templates the input points at. ctx is the
// request's context.
func templateText(in *goTemplate, ctx map[string]any) (string, error) {
	switch in.Source {
	case sourceInline:
		if in.Inline == nil || (in.Inline.Template == "" && len(in.Inline.Templates) == 0) {
			return "", errors.New("inline.template or inline.templates should be provided")
		}
		if in.Inline.Template != "" {
			return in.Inline.Template, nil
		}
		return strings.Join(in.Inline.Templates, "\n---\n"), nil
	case sourceFileSystem:
		if in.FileSystem == nil || in.FileSystem.DirPath == "" {
			return "", errors.New("fileSystem.dirPath should be provided")
		}
		text, err := readTemplateDir(templateFS, in.FileSystem.DirPath)
		if err != nil {
			return "", fmt.Errorf("cannot read tmpl from the folder {%s}: %s", in.FileSystem.DirPath, readError(err))
		}
		return text, nil
	case sourceEnvironment:
		if in.Environment == nil || in.Environment.Key == "" {
			return "", errors.New("environment.key should be provided")
		}
		env, ok := ctx[environmentKey].(map[string]any)
		if !ok {
			return "", errors.New("cannot read tmpl from the environment: " + environmentKey + " key does not exist in context")
		}
		v, ok := env[in.Environment.Key]
		if !ok {
			return "", fmt.Errorf("cannot read tmpl from the environment: key: %s does not exist", in.Environment.Key)
		}
		text, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("cannot read tmpl from the environment: key: %s value is not a string", in.Environment.Key)
		}
		return text, nil
	case "":
		return "", errors.New("source is required")
	default:
		return "", fmt.Errorf("invalid source: %s", in.Source)
	}
}

// templateFS is where FileSystem templates are read from.
var templateFS fs.FS = grantedFS{}

// grantedFS opens paths as given (absolute, or relative to the working
// directory), which is how upstream reads its templates, in the
// directories the host granted this call: component.Open lists them on
// every call, where os.Open would see those of the snapshot the component
// starts from (none).
type grantedFS struct{}

func (grantedFS) Open(name string) (fs.File, error) {
	return component.Open(name)
}

// readTemplateDir concatenates every file under dir, in lexical walk
// order, each followed by a document separator. Directories and files
// whose name starts with a dot are skipped (so is dir itself, if its name
// does).
func readTemplateDir(fsys fs.FS, dir string) (string, error) {
	var b strings.Builder
	err := fs.WalkDir(fsys, dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hidden := entry.Name()[0] == '.'
		if entry.IsDir() && hidden {
			return filepath.SkipDir
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		if info.IsDir() || info.Name()[0] == '.' {
			return nil
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		b.Write(data)
		b.WriteString("\n---\n")
		return nil
	})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// linuxErrnoText is how Linux words the errors reading a directory can
// meet. Upstream runs on Linux; WASI words them differently ("No such file
// or directory").
var linuxErrnoText = map[syscall.Errno]string{
	syscall.ENOENT:       "no such file or directory",
	syscall.ENOTDIR:      "not a directory",
	syscall.EACCES:       "permission denied",
	syscall.EPERM:        "operation not permitted",
	syscall.EISDIR:       "is a directory",
	syscall.ELOOP:        "too many levels of symbolic links",
	syscall.ENAMETOOLONG: "file name too long",
}

// noFilesystem is what a FileSystem source meets in plait without a grant:
// the sandbox has no directory to open the path under, which WASI reports
// as EBADF.
const noFilesystem = "no directory is granted to this function at that path: in plait render, " +
	"grant one with the Function's render.plait.dev/filesystem annotation (<dir>=<dirPath>); " +
	"the controller grants none, so give the templates inline (source: Inline) or in the environment (source: Environment)"

// readError words an error reading the template directory: the missing
// filesystem by name, anything else as Linux words it.
func readError(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) && errors.Is(pathErr.Err, syscall.EBADF) {
		return fmt.Errorf("%s %s: %s", pathErr.Op, pathErr.Path, noFilesystem)
	}
	return linuxWording(err)
}

func linuxWording(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		if errno, ok := pathErr.Err.(syscall.Errno); ok {
			if text, ok := linuxErrnoText[errno]; ok {
				pathErr.Err = errors.New(text)
			}
		}
	}
	return err
}
