"""What keeps a job apart from the host and from other jobs: namespaces, a read-only root, a cgroup, seccomp, a
fresh staging folder, and the view of the job's processes from outside. Used by the host (to start a job), by
the judge (to enter the sandbox) and by the runner (its seccomp filter); imports no other room of the harness."""
