"""Slurm (and PBS) job requests: checked before submission, built into commands and scripts.

    from labkit import jobs
    request = jobs.SlurmRequest(ntasks=16, ntasks_per_node=16, nodes=1, cpus_per_task=8,
                                gres="rdu:8", tiles_per_task=4)
    request.validate(jobs.SN30)              # JobRequestError saying why, in plain words
    job = jobs.submit(request, "run.sh")     # real sbatch; JobRejected carries Slurm's message
    status = jobs.follow(job)                # scontrol / sacct polling, progress bar

The package: ``request`` (the request and the checks that mirror what Slurm refuses, compared
on a real Slurm by tests/slurm), ``scripts`` (sbatch/srun/PBS commands and scripts),
``submission`` (submit and follow), ``scheduler`` (asking Slurm). docs/jobs.md tells the rest.
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
