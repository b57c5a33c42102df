package sys

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BPF program and attach types of the kernel's uapi (linux/bpf.h) that
// paddock's probes use.
const (
	BPFProgTypeLSM = 29 // BPF_PROG_TYPE_LSM
	BPFLSMMac      = 27 // BPF_LSM_MAC, the attach type of an LSM program
)

// bpf(2) commands.
const (
	bpfProgLoad   = 5  // BPF_PROG_LOAD
	bpfLinkCreate = 28 // BPF_LINK_CREATE
)

// bpfProgLoadAttr is union bpf_attr for BPF_PROG_LOAD, up to attach_btf_id
// and the union after it: the fields a program attached by BTF id needs.
// The kernel takes a shorter attr than its own and zeroes the rest.
type bpfProgLoadAttr struct {
	progType           uint32
	insnCnt            uint32
	insns              uint64
	license            uint64
	logLevel           uint32
	logSize            uint32
	logBuf             uint64
	kernVersion        uint32
	progFlags          uint32
	progName           [16]byte
	progIfindex        uint32
	expectedAttachType uint32
	progBTFFd          uint32
	funcInfoRecSize    uint32
	funcInfo           uint64
	funcInfoCnt        uint32
	lineInfoRecSize    uint32
	lineInfo           uint64
	lineInfoCnt        uint32
	attachBTFID        uint32
	attachProgFd       uint32
	_                  uint32
}

// bpfLinkCreateAttr is union bpf_attr for BPF_LINK_CREATE, up to flags.
type bpfLinkCreateAttr struct {
	progFd     uint32
	targetFd   uint32
	attachType uint32
	flags      uint32
}

// BPFReturnZero is the smallest BPF program: r0 = 0; exit. As an LSM
// program it allows everything it is asked about.
func BPFReturnZero() []uint64 {
	// struct bpf_insn { u8 code; u8 dst:4, src:4; s16 off; s32 imm; },
	// little-endian: BPF_ALU64|BPF_MOV|BPF_K (0xb7) r0, 0; BPF_JMP|BPF_EXIT (0x95).
	return []uint64{0xb7, 0x95}
}

// BPFProgLoadBTF is bpf(BPF_PROG_LOAD) of a program of progType attached
// by BTF id (attachType, the id of its target in vmlinux BTF), licensed
// GPL; it returns the program's descriptor. The verifier's log is not
// asked for.
func BPFProgLoadBTF(progType, attachType, btfID uint32, insns []uint64) (int, error) {
	license := []byte("GPL\x00")
	attr := bpfProgLoadAttr{
		progType:           progType,
		insnCnt:            uint32(len(insns)),
		insns:              uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license:            uint64(uintptr(unsafe.Pointer(&license[0]))),
		expectedAttachType: attachType,
		attachBTFID:        btfID,
	}
	copy(attr.progName[:], "paddock_probe")
	fd, _, errno := unix.Syscall(unix.SYS_BPF, bpfProgLoad, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// BPFLinkCreate is bpf(BPF_LINK_CREATE) of the program prog with
// attachType and no target descriptor (an LSM or tracing program): the
// program runs until the link's descriptor, returned, is closed.
func BPFLinkCreate(prog int, attachType uint32) (int, error) {
	attr := bpfLinkCreateAttr{progFd: uint32(prog), attachType: attachType}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, bpfLinkCreate, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
