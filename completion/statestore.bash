# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# bash completion for statestore(1): commands, options, and the values
# some options take. Installed as share/bash-completion/completions/statestore.

# Bash replaces only the part of the word after its last ':' or '='
# (COMP_WORDBREAKS), while cur below runs to the blank before it: each
# reply loses what cur holds up to there, or a file a:b offered for a:
# would come out as a:a:b. (bash-completion's __ltrim_colon_completions
# does this for ':' alone, and only where bash-completion is installed.)
_statestore_ltrim()
{
    local breaks="" pre
    [[ $COMP_WORDBREAKS == *:* ]] && breaks+=":"
    [[ $COMP_WORDBREAKS == *=* ]] && breaks+="="
    [[ -n $breaks && $cur == *["$breaks"]* ]] || return 0
    pre=${cur%"${cur##*["$breaks"]}"}
    local i
    for i in "${!COMPREPLY[@]}"; do
        COMPREPLY[i]=${COMPREPLY[i]#"$pre"}
    done
}

# Files (-f) or directories (-d) whose names start with cur: one reply a
# name (spaces and all), which bash then quotes as a file name.
_statestore_files()
{
    compopt -o filenames 2>/dev/null
    local typed=$cur
    # As typed, a name may hold escapes (my\ file) or start with a quote.
    if [[ $typed == \'* ]]; then
        typed=${typed#\'}
    elif [[ $typed == \"* ]]; then
        typed=${typed#\"}
    elif [[ $typed == *\\* && $raw_words ]]; then
        local plain="" i
        for ((i = 0; i < ${#typed}; i++)); do
            [[ ${typed:i:1} == \\ ]] && ((i++))
            plain+=${typed:i:1}
        done
        typed=$plain
    fi
    mapfile -t COMPREPLY < <(compgen "$1" -- "$typed")
    local had=$cur
    cur=$typed
    _statestore_ltrim
    cur=$had
}

_statestore()
{
    local cur prev words cword raw_words=1
    # Words split at blanks only: bash also splits at ':' and '=', which
    # cut -L mqtt://host:1883 and --port=1884 into pieces.
    _init_completion -n =: 2>/dev/null || {
        if [[ -n ${COMP_LINE-} ]]; then
            local line=${COMP_LINE:0:COMP_POINT}
            raw_words=""
            # read takes "my\ file" as one word, "my file".
            read -a words <<< "$line"
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
            _statestore_files -f
            return ;;
        --capath)
            _statestore_files -d
            return ;;
        --tls-version)
            mapfile -t COMPREPLY < <(compgen -W "tlsv1.3 tlsv1.2 tlsv1.1" -- "$cur")
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
            mapfile -t COMPREPLY < <(compgen -W "$common" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
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
        restore) _statestore_files -f; return ;;
        import)
            if [[ $cur == -* ]]; then
                mapfile -t COMPREPLY < <(compgen -W "$common --etcd --etcd-prefix" -- "$cur")
            else
                _statestore_files -f
            fi
            return ;;
    esac
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$common $extra" -- "$cur")
    fi
}
complete -F _statestore statestore
