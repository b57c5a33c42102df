// spike.bpf.c: the experiment of docs/lsm-spike/README.md, not paddock's
// code. BPF LSM programs that keep a session's membership in task storage
// (task_alloc) and refuse a member's signal to a non-member (task_kill),
// holding the refused call until user space has written its message:
// the refusal reports through a ring buffer, schedules an empty task work
// with TWA_SIGNAL on the caller and returns -ERESTARTNOINTR, so the call
// restarts without a signal being delivered, until user space posts an
// acknowledgement; then it returns EPERM. run.sh generates vmlinux.h.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define CLONE_THREAD 0x00010000
#define F_CONFINED 1
#define F_OWNED 2
#define F_ROOT 4
#define F_SEED 8

#define ST_NONE 0
#define ST_PENDING 1

struct member {
	__u64 session;
	__u32 flags;
	__u32 state;
	__u64 since;
	__u32 seq;
	__u32 pad;
};

struct twval { struct bpf_task_work tw; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct twval);
} tws SEC(".maps");

static int noop_cb(struct bpf_map *map, void *key, void *value);
extern int bpf_task_work_schedule_signal(struct task_struct *task, struct bpf_task_work *tw, void *map__map, bpf_task_work_callback_t callback) __ksym;

/* wait_again arranges for the current syscall to be restarted; 0 on
 * success. Its task work lives in tws until the wait ends (done_waiting):
 * an element left behind would fill the map, and then no caller could wait. */
static int wait_again(struct task_struct *cur)
{
	__u32 tid = cur->pid;
	struct twval *v = bpf_map_lookup_elem(&tws, &tid);
	if (!v) {
		struct twval z = {};
		bpf_map_update_elem(&tws, &tid, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&tws, &tid);
		if (!v)
			return -1;
	}
	return bpf_task_work_schedule_signal(cur, &v->tw, &tws, noop_cb);
}

/* done_waiting ends a wait: the work scheduled last has run (it ran on the
 * way out of the call this one restarts), so its element can go. */
static void done_waiting(struct task_struct *cur, struct member *c)
{
	__u32 tid = cur->pid;
	c->state = ST_NONE;
	bpf_map_delete_elem(&tws, &tid);
}

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct member);
} members SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

/* acked holds, per thread, the sequence number of the last refusal user
 * space has answered; it is freed with the thread, so an answer that
 * comes after the caller gave up or died leaves nothing behind. */
struct ack {
	__u32 seq;
};
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ack);
} acked SEC(".maps");

struct event {
	__u32 caller_tid, caller_tgid, target_tid, target_tgid;
	__s32 sig;
	__u32 seq;
	__s64 nr;
};

static int noop_cb(struct bpf_map *map, void *key, void *value) { return 0; }

SEC("lsm/task_alloc")
int BPF_PROG(task_alloc, struct task_struct *task, unsigned long clone_flags)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct member *p = bpf_task_storage_get(&members, cur, 0, 0);
	if (!p)
		return 0;
	__u32 flags = 0;
	if (p->flags & F_SEED)
		flags = F_CONFINED | F_OWNED | F_ROOT;
	else if (p->flags & F_CONFINED)
		flags = F_CONFINED | F_OWNED | ((clone_flags & CLONE_THREAD) ? (p->flags & F_ROOT) : 0);
	else if (p->flags & F_OWNED)
		flags = F_OWNED;
	if (!flags)
		return 0;
	struct member *c = bpf_task_storage_get(&members, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return 0; /* a real backend must refuse the fork here (-ENOMEM) */
	c->session = p->session;
	c->flags = flags;
	return 0;
}

SEC("lsm/task_kill")
int BPF_PROG(task_kill, struct task_struct *p, struct kernel_siginfo *info, int sig, const struct cred *cred, int ret)
{
	if (ret)
		return ret;
	if (sig == 0)
		return 0;
	/* kill_pid_usb_asyncio passes the sender's cred and runs in another
	 * task's context; its si_code is SI_ASYNCIO. (A NULL test of cred is
	 * folded away: the verifier takes hook arguments as non-NULL.) */
	if ((unsigned long)info > 4096 && info->si_code == -4)
		return 0;
	struct task_struct *cur = bpf_get_current_task_btf();
	struct member *c = bpf_task_storage_get(&members, cur, 0, 0);
	if (!c || !(c->flags & F_CONFINED))
		return 0;
	if (cur->tgid == p->tgid)
		return 0;
	struct member *t = bpf_task_storage_get(&members, p, 0, 0);
	if (t && t->session == c->session && (t->flags & F_OWNED) && !(t->flags & F_ROOT))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (c->state == ST_PENDING) {
		struct ack *a = bpf_task_storage_get(&acked, cur, 0, 0);
		if (a && a->seq == c->seq) {
			done_waiting(cur, c);
			return -1;
		}
		if (now - c->since > 10000000000ULL) {
			done_waiting(cur, c);
			return -1;
		}
		if (wait_again(cur)) {
			done_waiting(cur, c);
			return -1;
		}
		return -513;
	}
	c->seq++;
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return -1;
	e->caller_tid = cur->pid;
	e->caller_tgid = cur->tgid;
	e->target_tid = p->pid;
	e->target_tgid = p->tgid;
	e->sig = sig;
	e->seq = c->seq;
	e->nr = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	c->state = ST_PENDING;
	c->since = now;
	if (wait_again(cur)) {
		done_waiting(cur, c);
		return -1;
	}
	return -513;
}
