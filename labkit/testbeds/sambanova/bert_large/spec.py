"""The SambaNova BERT-Large exercise's parameters: the spec, its checks, and the sbatch request.

Every target checks the request against the SN30 nodes the course used at ALCF (labkit.jobs.SN30),
so the portable run keeps the exercise's meaning: a request the testbed refuses is refused here.
"""

from __future__ import annotations

from typing import Optional, Tuple

from labkit import accelerator, jobs
from labkit.params import INT_OR_AUTO, PATH, Config, Param, Spec, existing_file

__all__ = ["SPEC", "EXERCISE", "MODEL_SIZES", "slurm_request", "describe_request"]

EXERCISE = "sambanova/bert_large"
#: labkit.bert's presets (tests/sambanova checks they stay equal).
MODEL_SIZES = ("large", "base", "mini", "tiny", "micro")


def slurm_request(config: Config, output: Optional[str] = None) -> jobs.SlurmRequest:
    """The ``sbatch`` request of the course's BertLarge.sh, from the parameters."""
    return jobs.SlurmRequest(ntasks=config.ntasks, ntasks_per_node=config.ntasks_per_node, nodes=config.nodes,
                             cpus_per_task=config.cpus_per_task, gres="rdu:{}".format(config.rdus_per_node),
                             tiles_per_task=config.num_tiles, output=output, job_name="BertLarge_run.sh")


def _check_slurm_request(config: Config) -> Optional[Tuple[str, str]]:
    problems = slurm_request(config).problems(jobs.SN30)
    if not problems:
        return None
    first = problems[0]
    name = ("rdus_per_node" if "--gres=rdu" in first else "num_tiles" if "tiles" in first else
            "cpus_per_task" if "CPUs" in first else "nodes" if first.startswith("--nodes") else "ntasks")
    return name, "this sbatch request cannot run on an SN30 node: " + " ".join(problems)


def _check_sweep(config: Config) -> Optional[Tuple[str, str]]:
    bad = [n for n in config.sweep_ntasks if n < 1 or n > config.nodes * config.ntasks_per_node]
    if bad:
        return "sweep_ntasks", "{} outside 1..{} (nodes x ntasks_per_node)".format(bad, config.nodes * config.ntasks_per_node)
    return None


def _check_micro_batch(config: Config) -> Optional[Tuple[str, str]]:
    micro = config.micro_batch_size
    if micro not in (None, "auto") and (micro > config.batch_size or config.batch_size % micro):
        return "micro_batch_size", "must divide batch_size = {} (the micro-batches of one step)".format(
            config.batch_size)
    return None


SPEC = Spec(
    EXERCISE,
    Param("ntasks", int, 16, min=1, max=4096, help="sbatch --ntasks: data-parallel ranks (SambaFlow processes)"),
    Param("ntasks_per_node", int, 16, min=1, max=1024, help="sbatch --ntasks-per-node"),
    Param("nodes", int, 1, min=1, max=64, help="sbatch --nodes"),
    Param("cpus_per_task", int, 8, min=1, max=1024, help="sbatch --cpus-per-task"),
    Param("rdus_per_node", int, 8, min=1, max=64, help="sbatch --gres=rdu:N (RDUs per node)"),
    Param("num_tiles", int, 4, choices=(1, 2, 4, 8), help="SambaFlow compile --num-tiles: RDU tiles per rank"),
    Param("batch_size", int, 256, min=1, max=65536, help="per-rank batch (-b)"),
    Param("steps", int, 505, min=1, max=250000, help="--steps_this_run: steps every rank runs"),
    Param("max_seq_length", int, 128, min=8, max=512, help="--max_seq_length"),
    Param("model_size", str, "large", choices=MODEL_SIZES,
          help="BERT preset; the testbed compiles 'large' only, the portable run takes any"),
    Param("learning_rate", float, 0.000175, min=0, min_exclusive=True, max=1.0),  # the course's BertLarge_run.sh
    Param("target", str, "auto", choices=("auto", "testbed", "portable", "log"),
          help="auto: log if log_path is given, the testbed on a SambaNova node, else portable"),
    Param("device", str, "auto", choices=("auto", "cuda", "cpu"), help="portable run: GPUs (NCCL) or CPU (gloo)"),
    Param("precision", str, "auto", choices=accelerator.PRECISIONS,
          help="portable run: auto (bf16 autocast on an Ampere or newer GPU, fp32 on a CPU), fp32, tf32 or bf16; "
               "the SN30 trains in mixed precision whatever this says"),
    Param("micro_batch_size", INT_OR_AUTO, None, optional=True, min=1, max=65536,
          help="portable run: gradient-accumulation micro-batch per rank; None or 'auto': the largest that fits "
               "the GPU (a measured probe), the whole batch on a CPU"),
    Param("seed", int, 0, min=0, max=2 ** 31 - 1),
    Param("log_path", PATH, None, optional=True, check=existing_file,
          help="a SambaNova training log (or slurm-<id>.out) to read instead of running"),
    Param("work_dir", str, "~/BertLarge", help="testbed: where the PEF, scripts and logs go (the course's ~/BertLarge)"),
    Param("sweep_ntasks", list, [], item_type=int, help="extra ntasks values to run for the homework plot"),
    Param("compare_logs", list, [], item_type=PATH, check=existing_file,
          help="testbed training logs to add to the homework plot"),
    checks=[_check_slurm_request, _check_sweep, _check_micro_batch],
)


def describe_request(config: Config) -> str:
    """The ``sbatch`` line of the course's BertLarge.sh for these parameters, and what it asks for."""
    request = slurm_request(config)
    return "\n".join([
        "sbatch --ntasks {} --gres=rdu:{} --ntasks-per-node {} --nodes {} --cpus-per-task={} BertLarge_run.sh".format(
            config.ntasks, config.rdus_per_node, config.ntasks_per_node, config.nodes, config.cpus_per_task),
        "  {} task(s) on {} node(s), at most {} per node; {} CPUs per task".format(
            config.ntasks, config.nodes, request.tasks_per_node(), config.cpus_per_task),
        "  RDU tiles on a node: {} tasks x {} tiles = {} used, of {} RDUs x {} tiles = {} requested".format(
            request.tasks_per_node(), config.num_tiles, (request.tasks_per_node() or 0) * config.num_tiles,
            config.rdus_per_node, jobs.SN30.tiles_per_rdu, config.rdus_per_node * jobs.SN30.tiles_per_rdu),
        "  fits an SN30 node: yes (labkit checked it against {} CPUs and {} RDUs per node)".format(
            jobs.SN30.cpus_per_node, jobs.SN30.rdus_per_node),
    ])
