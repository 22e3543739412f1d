"""``samples``: the example programs installed with cgraph."""

from __future__ import annotations

import click

from . import output
from .options import EXIT_CODES, common_options, output_option, sample_summaries


def _complete_sample(ctx, param, incomplete):
    from click.shell_completion import CompletionItem

    names = [*sample_summaries(), ("checks.toml", "A checks file for the samples.")]
    return [CompletionItem(n, help=about) for n, about in names if n.startswith(incomplete)]


@click.command("samples", short_help="List the sample programs, or print one.", epilog=EXIT_CODES)
@click.argument("name", required=False, metavar="[NAME]", shell_complete=_complete_sample)
@output_option
@common_options
def samples_command(name):
    """List the sample programs installed with cgraph, or print one (NAME, or NAME.cg; also
    checks.toml, a checks file for them). Any command takes a sample as SOURCE: sample:NAME.

    \b
    Examples:
      cgraph samples                      # the list, with each sample's first comment
      cgraph samples neuron               # the program
      cgraph samples mlp -o mlp.cg        # a copy to edit
      cgraph grad sample:neuron           # run one as it is
    """
    from ..data.sources import read_file, sample_path, samples_folder

    if name is None:
        rows = [f"{sample:<24} {first}".rstrip() for sample, first in sample_summaries()]
        output.write_text("\n".join(rows))
        return
    path = samples_folder() / name if name == "checks.toml" else sample_path(name)
    output.write_text(read_file(str(path), "a program file").text, nl=False)


COMMANDS = [samples_command]
