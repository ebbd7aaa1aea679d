"""One module per command: each declares its parameters, crosses into async once, renders and
picks the exit code (``cli.main`` registers them; the modules beside this package are the CLI's
infrastructure: options, errors, interrupts, completion).  ``COMMANDS`` names each command's
module, in the order the help lists them."""

from . import (
    copy,
    delete,
    demo,
    info,
    list,
    rename,
    search,
    secrets,
    show,
    snapshot_info,
    tail,
    upgrade,
    usage,
    verify,
)

COMMANDS = {
    "list": list,
    "show": show,
    "tail": tail,
    "search": search,
    "secrets": secrets,
    "rename": rename,
    "delete": delete,
    "snapshot-info": snapshot_info,
    "verify": verify,
    "upgrade": upgrade,
    "info": info,
    "usage": usage,
    "copy": copy,
    "demo": demo,
}
