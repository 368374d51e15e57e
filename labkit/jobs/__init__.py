"""Slurm (and PBS) job requests: checked before submission, built into commands and scripts.

    from labkit import jobs
    request = jobs.SlurmRequest(ntasks=16, ntasks_per_node=16, nodes=1, cpus_per_task=8,
                                gres="rdu:8", tiles_per_task=4)
    request.validate(jobs.SN30)              # JobRequestError saying why, in plain words
    jobs.sbatch_argv(request, "BertLarge_run.sh")
    job = jobs.submit(request, "run.sh")     # real sbatch; JobRejected carries Slurm's message
    status = jobs.follow(job)                # squeue / scontrol / sacct polling, progress bar
    jobs.follow(job, reached=steps_in_log, total=1000)   # the bar counts what the job reached
    jobs.output_path(job)                    # where Slurm wrote the job's stdout

    # Graphcore: environment variables go BEFORE srun (after it they would be the program)
    jobs.srun_command(["python", "mnist_poptorch.py"], ipus=1,
                      env={"POPTORCH_CACHE_DIR": "/tmp/cache"})
    # -> 'POPTORCH_CACHE_DIR=/tmp/cache srun --ipus=1 python mnist_poptorch.py'

Shared by every testbed module (see docs/jobs.md). The package: ``request`` (the request and
its checks), ``scripts`` (sbatch/srun/PBS commands and scripts), ``submission`` (submit and
follow), ``scheduler`` (asking Slurm). The checks mirror what Slurm itself refuses
at submission (tests/slurm compares the two on a real Slurm); the messages say what to change.
"""

from labkit.jobs.request import SN30, ClusterLimits, JobRequestError, SlurmRequest, parse_gres
from labkit.jobs.scheduler import JobError, JobRejected, slurm_available
from labkit.jobs.scripts import batch_script, pbs_script, sbatch_argv, srun_argv, srun_command
from labkit.jobs.submission import Job, JobStatus, follow, job_status, output_path, submit, submit_script

__all__ = [
    "ClusterLimits", "SN30", "SlurmRequest", "JobRequestError", "JobRejected", "JobError",
    "Job", "JobStatus", "sbatch_argv", "batch_script", "srun_argv", "srun_command",
    "pbs_script", "submit", "submit_script", "job_status", "follow", "output_path",
    "parse_gres", "slurm_available",
]
