#!/usr/bin/env python3
"""Writes crates/sandbox-docker/src/seccomp.json: the Docker sandbox's
explicit seccomp profile.

The profile is an allow-list: every system call of the x86-64 kernel headers
(`linux-libc-dev`'s asm/unistd_64.h) except the denied ones below, with
default action ERRNO(EPERM), so a system call newer than the list is refused
rather than allowed. `clone` is allowed only without namespace flags and
`clone3` answers ENOSYS (its flags sit in memory a filter cannot read), so
the C library falls back to the filtered `clone`.

The denied set is what a test never needs and what an escape or a snoop
does: namespaces and mounts, kernel modules and keyrings, tracing other
processes, BPF and perf, io_uring, clocks, swap and reboot. It is stricter
than Docker's default in two places, on purpose: `ptrace` and
`process_vm_*` are refused (a test that runs a debugger under itself will
fail), and io_uring is refused.

Run it again when the kernel headers gain system calls:
    deploy/sandbox/seccomp/generate.py
"""

import json
import re
from pathlib import Path

HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
OUT = Path(__file__).resolve().parents[3] / "crates/sandbox-docker/src/seccomp.json"

DENIED = {
    # namespaces, mounts, changing root
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr",
    # kernel modules, kexec, reboot, swap, accounting, quotas
    "init_module", "finit_module", "delete_module", "create_module",
    "get_kernel_syms", "query_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
    # keyrings
    "add_key", "request_key", "keyctl",
    # other processes' memory and file descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_getfd", "process_madvise",
    # kernel attack surface that tests do not need
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "lookup_dcookie",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init",
    "iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl", "syslog",
    "vhangup", "nfsservctl", "mbind", "set_mempolicy", "move_pages",
    "migrate_pages",
    # host identity and clocks
    "sethostname", "setdomainname", "settimeofday", "clock_settime",
    "clock_adjtime",
    # never implemented, reserved
    "afs_syscall", "tuxcall", "security", "putpmsg", "getpmsg", "vserver",
    "create_module",
}
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
EPERM, ENOSYS = 1, 38


def main():
    names = sorted(set(re.findall(r"#define __NR_(\w+) \d+", HEADER.read_text())))
    allowed = [n for n in names if n not in DENIED and n not in ("clone", "clone3")]
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": EPERM,
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            {"names": allowed, "action": "SCMP_ACT_ALLOW"},
            {
                "names": ["clone"],
                "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": CLONE_NAMESPACES, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
            },
            {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS},
        ],
    }
    OUT.write_text(json.dumps(profile, indent=1) + "\n")
    print(f"{OUT}: {len(allowed)} allowed, {len([n for n in names if n in DENIED])} denied")


if __name__ == "__main__":
    main()
