//go:build wasip1

package component

// Reading the directories the host grants a call, through WASI preview 1
// directly. Go's own os package cannot: package syscall lists the
// preopened directories once, while the runtime starts, and a component
// starts from a snapshot taken where none was granted. Here the preopens
// are listed on every Open, so each call sees its own grants.

import (
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 fd_prestat_get
//go:noescape
func fdPrestatGet(fd int32, prestat unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
//go:noescape
func fdPrestatDirName(fd int32, name unsafe.Pointer, length uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_open
//go:noescape
func pathOpen(dir int32, lookupFlags uint32, path unsafe.Pointer, pathLength uint32, openFlags uint32, rights uint64, inheritedRights uint64, fdFlags uint32, fd unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 path_filestat_get
//go:noescape
func pathFilestatGet(dir int32, lookupFlags uint32, path unsafe.Pointer, pathLength uint32, stat unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_filestat_get
//go:noescape
func fdFilestatGet(fd int32, stat unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_read
//go:noescape
func fdRead(fd int32, iovecs unsafe.Pointer, count uint32, read unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_readdir
//go:noescape
func fdReaddir(fd int32, buf unsafe.Pointer, length uint32, cookie uint64, used unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 fd_close
func fdClose(fd int32) uint32

const (
	errnoBadf         = 8
	lookupFollow      = 1
	preopenTypeDir    = 0
	fileTypeDirectory = 3
	fileTypeSymlink   = 7
	// fd_read, fd_seek, fd_tell, path_open, fd_readdir, path_filestat_get
	// and fd_filestat_get: reading, nothing else.
	readRights = 1<<1 | 1<<2 | 1<<5 | 1<<13 | 1<<14 | 1<<18 | 1<<21
)

type preopen struct {
	fd   int32
	name string
}

// preopens lists the directories granted to this call, each under the
// absolute path the function sees it at.
func preopens() []preopen {
	var found []preopen
	for fd := int32(3); ; fd++ {
		var prestat [2]uint32 // tag (one byte, padded), name length
		switch errno := fdPrestatGet(fd, unsafe.Pointer(&prestat)); {
		case errno == errnoBadf:
			return found
		case errno != 0 || prestat[0]&0xff != preopenTypeDir:
			continue
		}
		name := make([]byte, prestat[1])
		if len(name) > 0 && fdPrestatDirName(fd, unsafe.Pointer(&name[0]), uint32(len(name))) != 0 {
			continue
		}
		found = append(found, preopen{fd: fd, name: path.Join("/", string(name))})
	}
}

// resolve finds the granted directory name lies in and its path there.
// A relative name is relative to the first granted directory, as Go's os
// package has it when no working directory is set.
func resolve(name string) (int32, string, bool) {
	dirs := preopens()
	if !path.IsAbs(name) {
		cwd := "/"
		if len(dirs) > 0 {
			cwd = dirs[0].name
		}
		name = path.Join(cwd, name)
	}
	name = path.Clean(name)
	best := -1
	for i, dir := range dirs {
		within := dir.name == "/" || name == dir.name || strings.HasPrefix(name, dir.name+"/")
		if within && (best < 0 || len(dir.name) > len(dirs[best].name)) {
			best = i
		}
	}
	if best < 0 {
		return 0, "", false
	}
	rest := strings.TrimLeft(strings.TrimPrefix(name, dirs[best].name), "/")
	if rest == "" {
		rest = "."
	}
	return dirs[best].fd, rest, true
}

// Open opens name (absolute, or relative to the first granted directory)
// for reading in the directories the host granted this call, as os.Open
// would in a process that could see only them. Without a grant that holds
// name, it fails with syscall.EBADF, as os.Open does under WASI.
func Open(name string) (fs.File, error) {
	dir, rest, ok := resolve(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EBADF}
	}
	var fd int32
	restBytes := []byte(rest)
	errno := pathOpen(dir, lookupFollow, unsafe.Pointer(&restBytes[0]), uint32(len(restBytes)), 0, readRights, readRights, 0, unsafe.Pointer(&fd))
	if errno != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.Errno(errno)}
	}
	var stat filestat
	if errno := fdFilestatGet(fd, unsafe.Pointer(&stat)); errno != 0 {
		fdClose(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: syscall.Errno(errno)}
	}
	return &file{fd: fd, path: name, info: stat.info(path.Base(name))}, nil
}

// filestat is WASI's: dev, ino, filetype (a byte, padded), nlink, size,
// atim, mtim, ctim.
type filestat [8]uint64

func (s *filestat) info(name string) fileInfo {
	return fileInfo{
		name:    name,
		dir:     s[2]&0xff == fileTypeDirectory,
		symlink: s[2]&0xff == fileTypeSymlink,
		size:    int64(s[4]),
		modTime: time.Unix(0, int64(s[6])),
	}
}

type fileInfo struct {
	name    string
	dir     bool
	symlink bool
	size    int64
	modTime time.Time
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) ModTime() time.Time { return i.modTime }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
func (i fileInfo) Mode() fs.FileMode {
	switch {
	case i.dir:
		return fs.ModeDir | 0o555
	case i.symlink:
		return fs.ModeSymlink | 0o777
	}
	return 0o444
}

// dirEntry is an entry as os.ReadDir gives it: a symbolic link is not
// followed.
type dirEntry struct{ info fileInfo }

func (e dirEntry) Name() string               { return e.info.name }
func (e dirEntry) IsDir() bool                { return e.info.dir }
func (e dirEntry) Info() (fs.FileInfo, error) { return e.info, nil }
func (e dirEntry) Type() fs.FileMode          { return e.info.Mode().Type() }

type file struct {
	fd      int32
	path    string
	info    fileInfo
	entries []fs.DirEntry
	listed  bool
	closed  bool
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *file) Read(b []byte) (int, error) {
	if f.closed {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrClosed}
	}
	if len(b) == 0 {
		return 0, nil
	}
	iovec := [2]uint32{uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b))}
	var n uint32
	if errno := fdRead(f.fd, unsafe.Pointer(&iovec), 1, unsafe.Pointer(&n)); errno != 0 {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: syscall.Errno(errno)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return int(n), nil
}

func (f *file) Close() error {
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	f.closed = true
	if errno := fdClose(f.fd); errno != 0 {
		return &fs.PathError{Op: "close", Path: f.path, Err: syscall.Errno(errno)}
	}
	return nil
}

// ReadDir lists the directory, sorted by name, each entry's information
// read while the directory is open.
func (f *file) ReadDir(n int) ([]fs.DirEntry, error) {
	if !f.listed {
		entries, err := f.list()
		if err != nil {
			return nil, err
		}
		f.entries, f.listed = entries, true
	}
	if n <= 0 {
		entries := f.entries
		f.entries = nil
		return entries, nil
	}
	if len(f.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(f.entries))
	entries := f.entries[:n]
	f.entries = f.entries[n:]
	return entries, nil
}

func (f *file) list() ([]fs.DirEntry, error) {
	if !f.info.dir {
		return nil, &fs.PathError{Op: "readdirent", Path: f.path, Err: syscall.ENOTDIR}
	}
	buf := make([]byte, 64<<10)
	var entries []fs.DirEntry
	var cookie uint64
	for {
		var used uint32
		if errno := fdReaddir(f.fd, unsafe.Pointer(&buf[0]), uint32(len(buf)), cookie, unsafe.Pointer(&used)); errno != 0 {
			return nil, &fs.PathError{Op: "readdirent", Path: f.path, Err: syscall.Errno(errno)}
		}
		// Each entry: next cookie (u64), inode (u64), name length (u32),
		// type (u8), padding, then the name; the last may be cut short.
		// The type is read again with the entry's information.
		at, progressed := uint32(0), false
		for at+24 <= used {
			next := *(*uint64)(unsafe.Pointer(&buf[at]))
			nameLength := *(*uint32)(unsafe.Pointer(&buf[at+16]))
			if at+24+nameLength > used {
				break
			}
			name := string(buf[at+24 : at+24+nameLength])
			at += 24 + nameLength
			cookie, progressed = next, true
			if name == "." || name == ".." {
				continue
			}
			entry, err := f.entry(name)
			if err != nil {
				return nil, err
			}
			entries = append(entries, entry)
		}
		if used < uint32(len(buf)) {
			break
		}
		if !progressed {
			// One name longer than the buffer: make room for it.
			buf = make([]byte, 2*len(buf))
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

func (f *file) entry(name string) (fs.DirEntry, error) {
	var stat filestat
	nameBytes := []byte(name)
	if errno := pathFilestatGet(f.fd, 0, unsafe.Pointer(&nameBytes[0]), uint32(len(nameBytes)), unsafe.Pointer(&stat)); errno != 0 {
		return nil, &fs.PathError{Op: "lstat", Path: path.Join(f.path, name), Err: syscall.Errno(errno)}
	}
	return dirEntry{info: stat.info(name)}, nil
}
