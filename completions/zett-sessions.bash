
_zett_sessions_completion() {
    local IFS=$'
'
    COMPREPLY=( $( env COMP_WORDS="${COMP_WORDS[*]}" \
                   COMP_CWORD=$COMP_CWORD \
                   _ZETT_SESSIONS_COMPLETE=complete_bash $1 ) )
    return 0
}

complete -o default -F _zett_sessions_completion zett-sessions

