"""runtime.sessions"""
