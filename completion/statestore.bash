# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# bash completion for statestore(1): commands, options, and the values
# some options take. Installed as share/bash-completion/completions/statestore.

_statestore()
{
    local cur prev words cword
    # Words split at blanks only: bash also splits at ':' and '=', which
    # cut -L mqtt://host:1883 and --port=1884 into pieces.
    _init_completion -n =: 2>/dev/null || {
        if [[ -n ${COMP_LINE-} ]]; then
            local line=${COMP_LINE:0:COMP_POINT}
            read -ra words <<< "$line"
            [[ $line == *[[:space:]] ]] && words+=("")
            cword=$((${#words[@]} - 1))
        else
            words=("${COMP_WORDS[@]}")
            cword=$COMP_CWORD
        fi
        cur=${words[cword]}
        prev=${words[cword-1]}
    }
    local commands="set get del vdel watch lock scan keys inspect backup restore export import ping stats status"
    local common="-h --host -p --port -i --id -u --username -P --password -L --url --cafile
                  --capath --cert --key --insecure --tls-version --timeout -d --debug --json
                  --help --version"

    # Options that take a value: complete files where that is what they take.
    case $prev in
        -f|--file|--cafile|--cert|--key)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --capath)
            COMPREPLY=($(compgen -d -- "$cur"))
            return ;;
        --tls-version)
            COMPREPLY=($(compgen -W "tlsv1.3 tlsv1.2 tlsv1.1" -- "$cur"))
            return ;;
        -h|--host|-p|--port|-i|--id|-u|--username|-P|--password|-L|--url|--timeout|--px|--ttl|--wait|--holder|--fencing-token|--etcd|--etcd-prefix|--pattern)
            return ;;
    esac

    # The command is the first word that is not an option or an option's value.
    local i command=""
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            -h|--host|-p|--port|-i|--id|-u|--username|-P|--password|-L|--url|--cafile|--capath|--cert|--key|--tls-version|--timeout|-f|--file|--px|--ttl|--wait|--holder|--fencing-token|--etcd|--etcd-prefix|--pattern)
                ((i++)) ;;
            -*) ;;
            *) command=${words[i]}; break ;;
        esac
    done

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$common" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return
    fi

    local extra=""
    case $command in
        set) extra="--nx --nex --px --fencing-token -f --file" ;;
        del) extra="--fencing-token" ;;
        vdel) extra="--fencing-token -f --file" ;;
        lock) extra="--ttl --wait --holder --" ;;
        stats) extra="--watch" ;;
        watch) extra="--pattern" ;;
        restore) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        import)
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$common --etcd --etcd-prefix" -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$common $extra" -- "$cur"))
    fi
}
complete -F _statestore statestore
