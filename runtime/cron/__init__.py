"""runtime.cron"""
