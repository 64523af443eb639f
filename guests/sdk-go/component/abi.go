//go:build wasip1

package component

// The canonical ABI of plait:function@1.0.0 for wasm32, written by hand:
// the host lowers the request into memory it allocates through
// cabi_realloc and passes its address; run-function returns the address of
// a result<response, error> it laid out, which the host reads before
// calling cabi_post_run-function. Offsets follow the canonical ABI's
// record layout rules (each field aligned to its type, variants and
// options a one-byte tag before their payload); the Rust host checks
// every byte of it when it lifts the result.

import (
	"unsafe"
)

// adapterArena is where the WASI preview 1 adapter keeps its stack and
// state. The adapter allocates them on its first WASI call, which Go's
// runtime makes while it starts, on a stack no go:wasmexport function may
// run on: so the adapter must not allocate through cabi_realloc.
// `plait function componentize` finds this array by the marker it starts
// with (which also gives its size) and exports a cabi_realloc_adapter,
// written in plain WebAssembly, that hands out its bytes. Only the marker
// takes space in the module: the linker leaves zero bytes out.
var adapterArena = [adapterArenaSize]byte{
	'p', 'l', 'a', 'i', 't', '-', 's', 'd', 'k', '-', 'g', 'o', ':',
	'a', 'd', 'a', 'p', 't', 'e', 'r', '-', 'a', 'r', 'e', 'n', 'a', ':',
	'v', '1', ':',
	byte(adapterArenaSize & 0xff), byte(adapterArenaSize >> 8 & 0xff), byte(adapterArenaSize >> 16 & 0xff), byte(adapterArenaSize >> 24 & 0xff),
}

// The adapter's stack is 64 KiB; its state a few KiB more.
const adapterArenaSize = 256 << 10

// retained keeps memory handed to the host (or filled by it) reachable
// until the call's post-return: Go's collector does not move heap objects,
// so an address stays valid as long as its backing array is referenced.
var retained [][]uint64

// alloc returns zeroed memory of size bytes, 8-byte aligned, kept alive
// until the post-return.
func alloc(size uint32) uintptr {
	if size == 0 {
		return 8
	}
	buf := make([]uint64, (size+7)/8)
	retained = append(retained, buf)
	return uintptr(unsafe.Pointer(&buf[0]))
}

//go:wasmexport cabi_realloc
func cabiRealloc(old, oldSize, align, newSize uint32) uint32 {
	p := alloc(newSize)
	if old != 0 && oldSize != 0 {
		n := min(oldSize, newSize)
		copy(unsafe.Slice((*byte)(mem(p)), n), unsafe.Slice((*byte)(ptr(old)), n))
	}
	return uint32(p)
}

//go:wasmexport run-function
func runFunctionExport(arg uint32) uint32 {
	req := readRequest(uintptr(arg))
	rsp, err := run(req)
	out := alloc(resultSize)
	if err != nil {
		store8(out, 1)
		store8(out+8, uint8(err.Kind))
		storeString(out+12, err.Message)
	} else {
		store8(out, 0)
		writeResponse(out+8, rsp)
	}
	return uint32(out)
}

//go:wasmexport cabi_post_run-function
func postRunFunction(uint32) {
	retained = nil
	// The adapter uses the arena without Go knowing: keep it linked in.
	arenaInUse = &adapterArena
}

var arenaInUse *[adapterArenaSize]byte

//go:wasmimport plait:function/log@1.0.0 log
func hostLog(level uint32, message unsafe.Pointer, length uint32)

// Log writes one line through the host's log import: the host attributes
// it to the step and caps its size.
func Log(level LogLevel, message string) {
	hostLog(uint32(level), unsafe.Pointer(unsafe.StringData(message)), uint32(len(message)))
}

// Sizes of the records that sit in lists, and of the result.
const (
	connectionDetailSize    = 16
	composedResourceSize    = 28
	requiredResourcesSize   = 16
	requiredSchemaSize      = 20
	credentialsSize         = 16
	functionResultSize      = 28
	conditionSize           = 36
	labelSize               = 16
	resourceRequirementSize = 48
	schemaRequirementSize   = 24
	resultSize              = 120
)

func ptr(addr uint32) unsafe.Pointer { return mem(uintptr(addr)) }

// mem is the Go pointer for a linear-memory address. Addresses the host
// passes point into memory cabi_realloc handed out, which retained keeps
// reachable; the rest point into Go values alive for the call.
func mem(addr uintptr) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(nil), addr) }

func load8(p uintptr) uint8   { return *(*uint8)(mem(p)) }
func load32(p uintptr) uint32 { return *(*uint32)(mem(p)) }

func store8(p uintptr, v uint8)   { *(*uint8)(mem(p)) = v }
func store32(p uintptr, v uint32) { *(*uint32)(mem(p)) = v }
func store64(p uintptr, v uint64) { *(*uint64)(mem(p)) = v }

// list reads a (pointer, length) pair.
func list(p uintptr) (uintptr, uint32) { return uintptr(load32(p)), load32(p + 4) }

func loadBytes(p uintptr) []byte {
	base, n := list(p)
	if n == 0 {
		return nil
	}
	return append([]byte(nil), unsafe.Slice((*byte)(mem(base)), n)...)
}

func loadString(p uintptr) string {
	base, n := list(p)
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(mem(base)), n))
}

func loadOptString(p uintptr) *string {
	if load8(p) == 0 {
		return nil
	}
	s := loadString(p + 4)
	return &s
}

func loadConnectionDetails(p uintptr) []ConnectionDetail {
	base, n := list(p)
	out := make([]ConnectionDetail, n)
	for i := range out {
		e := base + uintptr(i)*connectionDetailSize
		out[i] = ConnectionDetail{Key: loadString(e), Value: loadBytes(e + 8)}
	}
	return out
}

func loadResource(p uintptr) Resource {
	return Resource{
		JSON:              loadString(p),
		ConnectionDetails: loadConnectionDetails(p + 8),
		Ready:             Ready(load8(p + 16)),
	}
}

func loadState(p uintptr) State {
	var s State
	if load8(p) != 0 {
		r := loadResource(p + 4)
		s.Composite = &r
	}
	base, n := list(p + 24)
	s.Resources = make([]ComposedResource, n)
	for i := range s.Resources {
		e := base + uintptr(i)*composedResourceSize
		s.Resources[i] = ComposedResource{Name: loadString(e), Resource: loadResource(e + 8)}
	}
	return s
}

func readRequest(p uintptr) *Request {
	req := &Request{}
	req.Meta.Tag = loadString(p)
	base, n := list(p + 8)
	req.Meta.Capabilities = make([]Capability, n)
	for i := range req.Meta.Capabilities {
		req.Meta.Capabilities[i] = Capability(load8(base + uintptr(i)))
	}
	req.Observed = loadState(p + 16)
	req.Desired = loadState(p + 48)
	req.Input = loadOptString(p + 80)
	req.Context = loadString(p + 92)

	base, n = list(p + 100)
	req.RequiredResources = make([]RequiredResources, n)
	for i := range req.RequiredResources {
		e := base + uintptr(i)*requiredResourcesSize
		items, m := list(e + 8)
		rr := RequiredResources{Name: loadString(e), Items: make([]string, m)}
		for j := range rr.Items {
			rr.Items[j] = loadString(items + uintptr(j)*8)
		}
		req.RequiredResources[i] = rr
	}

	base, n = list(p + 108)
	req.RequiredSchemas = make([]RequiredSchema, n)
	for i := range req.RequiredSchemas {
		e := base + uintptr(i)*requiredSchemaSize
		req.RequiredSchemas[i] = RequiredSchema{Name: loadString(e), OpenAPIV3: loadOptString(e + 8)}
	}

	base, n = list(p + 116)
	req.Credentials = make([]Credentials, n)
	for i := range req.Credentials {
		e := base + uintptr(i)*credentialsSize
		req.Credentials[i] = Credentials{Name: loadString(e), Data: loadConnectionDetails(e + 8)}
	}
	return req
}

// storeList allocates n elements of size bytes and stores their (pointer,
// length) at p; the caller fills the elements.
func storeList(p uintptr, n int, size uint32) uintptr {
	base := alloc(uint32(n) * size)
	store32(p, uint32(base))
	store32(p+4, uint32(n))
	return base
}

func storeBytes(p uintptr, b []byte) {
	base := storeList(p, len(b), 1)
	if len(b) > 0 {
		copy(unsafe.Slice((*byte)(mem(base)), len(b)), b)
	}
}

func storeString(p uintptr, s string) {
	base := storeList(p, len(s), 1)
	if len(s) > 0 {
		copy(unsafe.Slice((*byte)(mem(base)), len(s)), s)
	}
}

func storeOptString(p uintptr, s *string) {
	if s == nil {
		return
	}
	store8(p, 1)
	storeString(p+4, *s)
}

func storeOptTarget(p uintptr, t *Target) {
	if t == nil {
		return
	}
	store8(p, 1)
	store8(p+1, uint8(*t))
}

func storeConnectionDetails(p uintptr, details []ConnectionDetail) {
	base := storeList(p, len(details), connectionDetailSize)
	for i, d := range details {
		e := base + uintptr(i)*connectionDetailSize
		storeString(e, d.Key)
		storeBytes(e+8, d.Value)
	}
}

func storeResource(p uintptr, r *Resource) {
	storeString(p, r.JSON)
	storeConnectionDetails(p+8, r.ConnectionDetails)
	store8(p+16, uint8(r.Ready))
}

func storeState(p uintptr, s *State) {
	if s.Composite != nil {
		store8(p, 1)
		storeResource(p+4, s.Composite)
	}
	base := storeList(p+24, len(s.Resources), composedResourceSize)
	for i := range s.Resources {
		e := base + uintptr(i)*composedResourceSize
		storeString(e, s.Resources[i].Name)
		storeResource(e+8, &s.Resources[i].Resource)
	}
}

func writeResponse(p uintptr, rsp *Response) {
	storeString(p, rsp.Tag)
	if rsp.TTLMillis != nil {
		store8(p+8, 1)
		store64(p+16, *rsp.TTLMillis)
	}
	storeState(p+24, &rsp.Desired)

	base := storeList(p+56, len(rsp.Results), functionResultSize)
	for i, r := range rsp.Results {
		e := base + uintptr(i)*functionResultSize
		store8(e, uint8(r.Severity))
		storeString(e+4, r.Message)
		storeOptString(e+12, r.Reason)
		storeOptTarget(e+24, r.Target)
	}

	storeString(p+64, rsp.Context)

	base = storeList(p+72, len(rsp.Requirements.Resources), resourceRequirementSize)
	for i, r := range rsp.Requirements.Resources {
		e := base + uintptr(i)*resourceRequirementSize
		storeString(e, r.Name)
		sel := e + 8
		storeString(sel, r.Selector.APIVersion)
		storeString(sel+8, r.Selector.Kind)
		if r.Selector.MatchName != nil {
			store8(sel+16, 0)
			storeString(sel+20, *r.Selector.MatchName)
		} else {
			store8(sel+16, 1)
			labels := storeList(sel+20, len(r.Selector.MatchLabels), labelSize)
			for j, kv := range r.Selector.MatchLabels {
				storeString(labels+uintptr(j)*labelSize, kv[0])
				storeString(labels+uintptr(j)*labelSize+8, kv[1])
			}
		}
		storeOptString(sel+28, r.Selector.Namespace)
	}
	base = storeList(p+80, len(rsp.Requirements.Schemas), schemaRequirementSize)
	for i, s := range rsp.Requirements.Schemas {
		e := base + uintptr(i)*schemaRequirementSize
		storeString(e, s.Name)
		storeString(e+8, s.APIVersion)
		storeString(e+16, s.Kind)
	}

	base = storeList(p+88, len(rsp.Conditions), conditionSize)
	for i, c := range rsp.Conditions {
		e := base + uintptr(i)*conditionSize
		storeString(e, c.Type)
		store8(e+8, uint8(c.Status))
		storeString(e+12, c.Reason)
		storeOptString(e+20, c.Message)
		storeOptTarget(e+32, c.Target)
	}

	storeOptString(p+96, rsp.Output)
}
